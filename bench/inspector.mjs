// The isolate's memory through workerd's V8 inspector (`workerd serve --inspector-addr`): the
// JS heap and what V8 counts beside it, after a full collection. bench/check.mjs's paused part
// and bench/probes/paused_memory.mjs read it (bench/notes/2026-11-29-paused-memory.md).
import net from "node:net";

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => { const { port } = server.address(); server.close(() => resolve(port)); });
  });
}

/** workerd's extra arguments for an inspector on `port`. */
export const inspectorArgs = (port) => [`--inspector-addr=127.0.0.1:${port}`];

/**
 * Connect to the one Worker's isolate on the inspector at `port`. Returns {send(method, params),
 * memory(poke), close()}; memory() collects garbage (HeapProfiler.collectGarbage), then reads
 * Runtime.getHeapUsage: {usedSize, totalSize, embedderHeapUsedSize, backingStorageSize} as V8
 * returns them, in bytes. workerd runs the collection only once the isolate next runs code
 * (measured: the answer comes after the next request), so memory() calls `poke()` (a request
 * to the Worker) after asking for it.
 */
export async function inspect(port) {
  const WebSocket = globalThis.WebSocket ?? (await import("undici")).WebSocket;
  const list = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json();
  const ws = new WebSocket(list[0].webSocketDebuggerUrl);
  await new Promise((resolve, reject) => { ws.onopen = resolve; ws.onerror = reject; });
  let id = 0;
  const waiting = new Map();
  ws.onmessage = (m) => {
    const msg = JSON.parse(m.data);
    if (msg.id && waiting.has(msg.id)) { waiting.get(msg.id)(msg); waiting.delete(msg.id); }
  };
  const send = (method, params = {}) => new Promise((resolve, reject) => {
    const i = ++id;
    waiting.set(i, (msg) => (msg.error ? reject(new Error(`${method}: ${JSON.stringify(msg.error)}`)) : resolve(msg.result)));
    ws.send(JSON.stringify({ id: i, method, params }));
  });
  return {
    send,
    memory: async (poke) => {
      const collected = send("HeapProfiler.collectGarbage");
      await poke();
      await collected;
      return send("Runtime.getHeapUsage");
    },
    close: () => ws.close(),
  };
}
