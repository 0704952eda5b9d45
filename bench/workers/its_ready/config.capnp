using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = .w) ],
  sockets = [ (name = "http", address = "127.0.0.1:18793", http = (), service = "main") ],
);
const w :Workerd.Worker = ( modules = [ (name = "w.mjs", esModule = embed "w.mjs") ], compatibilityDate = "2025-11-01" );
