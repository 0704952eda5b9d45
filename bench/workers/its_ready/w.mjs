// Does an IdentityTransformStream({highWaterMark}) body's writer.ready resolve every time the
// client reads the backlog down? (issue 42, bench/notes/2026-11-29-paused-readers.md) Writes
// `total` bytes in `size`-byte writes; whenever desiredSize <= 0 it waits for ready, counting
// the waits. Run: workerd serve config.capnp; a client reads /?total=&size=&hwm= slowly.
export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    const total = Number(url.searchParams.get("total") ?? 4000000);
    const size = Number(url.searchParams.get("size") ?? 3300);
    const hwm = Number(url.searchParams.get("hwm") ?? 65536);
    const timer = url.searchParams.get("timer") === "1";
    const its = new IdentityTransformStream({ highWaterMark: hwm });
    const w = its.writable.getWriter();
    const work = (async () => {
      let sent = 0, waits = 0, n = 0;
      const t = timer ? setInterval(() => {}, 50) : null;
      while (sent < total) {
        const line = `${String(n++).padStart(10, "0")} `.repeat(Math.ceil(size / 11)).slice(0, size - 1) + "\n";
        w.write(new TextEncoder().encode(line)).catch(() => {});
        sent += size;
        if (url.searchParams.get("nowait") === "1") { if (n % 200 === 0) { console.log(`desiredSize ${w.desiredSize} at ${sent}`); await scheduler.wait(5); } continue; }
        if (w.desiredSize <= 0) {
          waits += 1;
          const before = Date.now();
          await w.ready;
          if (Date.now() - before > 5000) console.log(`slow ready ${Date.now() - before} ms at ${sent}`);
        }
      }
      console.log(`wrote ${sent} with ${waits} waits`);
      if (t) clearInterval(t);
      await w.close();
    })();
    ctx.waitUntil(work.catch((e) => console.log(`failed ${e}`)));
    const headers = url.searchParams.get("sse") === "1" ? { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache, no-transform", "x-accel-buffering": "no" } : {};
    return new Response(its.readable, { headers });
  },
};
