using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = .w) ],
  sockets = [ (name = "http", address = "127.0.0.1:0", http = (), service = "main") ],
);
const w :Workerd.Worker = (
  modules = [ (name = "entry.py", pythonModule = embed "entry.py") ],
  compatibilityDate = "2025-11-01",
  compatibilityFlags = ["python_workers", "python_workers_20260610"],
);
