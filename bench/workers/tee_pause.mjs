// Can a tee()'d model stream be paused and resumed on workerd? (issue 42, bench/notes/
// 2026-11-29-paused-readers.md; driven by bench/probes/tee_pause.mjs.) The relay's windowed
// reader (src/shell/jsstream.py) drains branch 0 natively into a CompressionStream and reads
// branch 1; this Worker does the same, then, per `mode`:
//   nopause  read branch 1 for `first` bytes, read nothing for `hold` ms, read the rest
//   pause    the same, but the drain's pipeTo is aborted (preventCancel) while branch 1 is not
//            read, and branch 0 is piped again into a fresh CompressionStream on resume
//   leave    pause as above, then cancel branch 1's reader and branch 0 (a client that left)
//   its      no tee: the upstream piped into an IdentityTransformStream({highWaterMark: hwm}),
//            read by a BYOB reader every `wait` ms for `first` bytes, nothing for `hold` ms, then
//            the rest (bench/notes/2026-11-29-paused-memory.md: a read returns one write)
// It answers JSON: what it read, in order (a SHA-256 and the byte count), and a log of steps.
const MODEL = "@cf/google/gemma-4-26b-a4b-it";

async function sha(parts) {
  const all = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) { all.set(p, at); at += p.byteLength; }
  const digest = await crypto.subtle.digest("SHA-256", all);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const mode = url.searchParams.get("mode") ?? "pause";
    const tokens = Number(url.searchParams.get("tokens") ?? 20000);
    const first = Number(url.searchParams.get("first") ?? 50000);
    const hold = Number(url.searchParams.get("hold") ?? 4000);
    const tag = url.searchParams.get("tag") ?? "tee";
    const t0 = Date.now();
    const log = [];
    const note = (what) => log.push(`${Date.now() - t0} ms: ${what}`);
    const upstream = await env.AI.run(MODEL, { messages: [{ role: "user", content: `[[tokens:${tokens}]] ${tag}` }], stream: true, max_tokens: tokens + 10 });
    if (mode === "body" || mode === "bodydirect") {
      // The relay's shape in JS: the chunks read go out in a body with a highWaterMark, and
      // nobody waits on it; desiredSize is logged (does the body see a paused client?).
      const its = new IdentityTransformStream({ highWaterMark: 65536 });
      const w = its.writable.getWriter();
      let src = upstream;
      if (mode === "body") {
        const [b0, b1] = upstream.tee();
        const squeeze = new CompressionStream("deflate-raw");
        new Response(squeeze.readable).arrayBuffer().catch(() => {});
        b0.pipeTo(squeeze.writable).catch(() => {});
        src = b1;
      }
      const r = src.getReader();
      (async () => {
        let min = 65536, n = 0, bytes = 0;
        for (;;) {
          const { done, value } = await r.read();
          if (done) break;
          w.write(value).catch(() => {});
          n += 1; bytes += value.byteLength;
          min = Math.min(min, w.desiredSize);
          if (n % 500 === 0) console.log(`${mode}: ${n} reads, ${bytes} bytes, desiredSize ${w.desiredSize}, min ${min}`);
        }
        console.log(`${mode}: done, ${n} reads, ${bytes} bytes, min desiredSize ${min}`);
        w.close().catch(() => {});
      })();
      return new Response(its.readable);
    }
    if (mode === "its") {
      // No tee: the upstream piped into an IdentityTransformStream with a highWaterMark, its
      // readable read by a BYOB reader every `wait` ms. Does a read return all the queued
      // writes (coalescing, as a tee branch's does), and does the pipe stop at the mark?
      const its = new IdentityTransformStream({ highWaterMark: Number(url.searchParams.get("hwm") ?? 65536) });
      upstream.pipeTo(its.writable).catch((e) => note(`pipe failed ${e}`));
      const reader = its.readable.getReader({ mode: "byob" });
      const wait = Number(url.searchParams.get("wait") ?? 20);
      const parts = [];
      const sizes = [];
      let got = 0;
      const readOne = async () => {
        const { done, value } = await reader.read(new Uint8Array(Number(url.searchParams.get("view") ?? 16384)));
        if (done) return false;
        parts.push(value.slice()); got += value.byteLength; sizes.push(value.byteLength);
        return true;
      };
      while (got < first) { await scheduler.wait(wait); if (!(await readOne())) break; }
      note(`read ${got} bytes in ${sizes.length} reads (first sizes ${sizes.slice(0, 12).join(",")})`);
      await scheduler.wait(hold);
      note(`held ${hold} ms`);
      const before = sizes.length;
      while (await readOne());  // at once: one read per write
      note(`read to the end: ${got} bytes, ${sizes.length - before} reads after the hold (sizes ${sizes.slice(before, before + 12).join(",")})`);
      return Response.json({ bytes: got, sha: await sha(parts), log });
    }
    if (mode === "direct") {
      const parts = [];
      const r = upstream.getReader();
      for (;;) { const { done, value } = await r.read(); if (done) break; parts.push(value); }
      return Response.json({ bytes: parts.reduce((n, p) => n + p.byteLength, 0), sha: await sha(parts), log });
    }
    const [b0, b1] = upstream.tee();
    let drainStop = new AbortController();
    const drain = (why) => {
      const squeeze = new CompressionStream("deflate-raw");
      new Response(squeeze.readable).arrayBuffer().then(() => note(`${why}: compressed side ended`), (e) => note(`${why}: compressed side failed ${e}`));
      const signal = drainStop.signal;
      b0.pipeTo(squeeze.writable, { signal, preventCancel: true }).then(() => note(`${why}: drain pipe resolved`), (e) => note(`${why}: drain pipe rejected ${e}`));
    };
    drain("drain 1");
    const reader = b1.getReader();
    const parts = [];
    let got = 0;
    let reads = 0;
    while (got < first) {
      const { done, value } = await reader.read();
      if (done) break;
      parts.push(value); got += value.byteLength; reads += 1;
    }
    note(`read ${got} bytes in ${reads} reads; b0.locked ${b0.locked}`);
    if (mode !== "nopause") {
      drainStop.abort();
      note(`drain aborted; b0.locked ${b0.locked}`);
      for (let i = 0; i < 50 && b0.locked; i++) await scheduler.wait(1);
      note(`b0.locked ${b0.locked}`);
    }
    await scheduler.wait(hold);
    note(`held ${hold} ms; b0.locked ${b0.locked}`);
    if (mode === "leave") {
      reader.cancel().then(() => note("b1 reader cancel resolved"), (e) => note(`b1 reader cancel rejected ${e}`));
      b0.cancel().then(() => note("b0 cancel resolved"), (e) => note(`b0 cancel rejected ${e}`));
      await scheduler.wait(500);
      return Response.json({ bytes: got, log });
    }
    if (mode !== "nopause") {
      drainStop = new AbortController();
      drain("drain 2");
    }
    let windows = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      parts.push(value); got += value.byteLength; windows += 1;
    }
    note(`read to the end: ${got} bytes, ${windows} reads after the hold`);
    return Response.json({ bytes: got, sha: await sha(parts), log });
  },
};
