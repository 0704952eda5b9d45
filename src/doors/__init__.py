"""The doors: one package per client protocol, each a request parser and an event encoder over
the one relay."""
