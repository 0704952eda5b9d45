// Does an IdentityTransformStream writer see an unread backlog? Four 40,000-byte writes nobody
// reads, with and without {highWaterMark}: desiredSize and ready after each (bench/notes/
// 2026-11-29-bare-workerd.md). Run: cd bench/workers/its_backpressure && workerd serve config.capnp
export default {
  async fetch(req) {
    const out = [];
    for (const opts of [undefined, { highWaterMark: 65536 }]) {
      let its;
      try { its = opts ? new IdentityTransformStream(opts) : new IdentityTransformStream(); } catch (e) { out.push(`ctor ${JSON.stringify(opts)}: ${e}`); continue; }
      const w = its.writable.getWriter();
      const row = [`opts ${JSON.stringify(opts)} initial desiredSize ${w.desiredSize}`];
      let readyResolved = false;
      for (let i = 0; i < 4; i++) {
        w.write(new Uint8Array(40000));
        await scheduler.wait(1);
        readyResolved = false; w.ready.then(() => { readyResolved = true; });
        await scheduler.wait(1);
        row.push(`after ${i + 1} writes: desiredSize ${w.desiredSize} ready ${readyResolved}`);
      }
      const r = its.readable.getReader();
      const got = await r.read();
      await scheduler.wait(1);
      row.push(`read ${got.value?.byteLength}: desiredSize ${w.desiredSize}`);
      out.push(row.join("; "));
    }
    return new Response(out.join("\n"));
  },
};
