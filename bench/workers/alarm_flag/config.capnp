# Under disable_python_no_global_handlers a Durable Object's alarm handler is on_alarm: GET /set
# sets an alarm 100 ms out, GET /get says whether it fired (bench/notes/2026-11-29-entry.md).
using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = .w), (name = "disk", disk = (path = "store", writable = true)) ],
  sockets = [ (name = "http", address = "127.0.0.1:18791", http = (), service = "main") ],
);
const w :Workerd.Worker = (
  modules = [ (name = "entry.py", pythonModule = embed "entry.py") ],
  compatibilityDate = "2025-11-01",
  compatibilityFlags = ["python_workers", "python_workers_20260610", "disable_python_no_global_handlers"],
  bindings = [ (name = "BOX", durableObjectNamespace = "Box") ],
  durableObjectNamespaces = [ (className = "Box", uniqueKey = "box", enableSql = true) ],
  durableObjectStorage = (localDisk = "disk"),
);
