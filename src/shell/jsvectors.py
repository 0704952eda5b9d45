"""An embedding model's answer from JS to Python, each vector packed as it is read."""

from __future__ import annotations

from array import array
from typing import Any

import js
from pyodide.ffi import to_js


def embedding_result(result: Any) -> object:
    """An embedding model's answer as Python values, each vector of its `data` packed as it is
    read: a vector of finite numbers (Array.prototype.every with Number.isFinite, in JS) goes
    through a Float64Array into an array of doubles, the same numbers, with no Python float
    made for it (bench/notes/2026-11-29-embeddings-memory.md). Any other vector comes as
    Python values, for the core to refuse (embedding_vectors.vectors)."""
    data: Any = getattr(result, "data", None)
    if not js.Array.isArray(data):
        return result.to_py()
    rest = js.Object.assign(js.Object.new(), result)
    rest.data = js.Array.new()
    out = rest.to_py()
    if not isinstance(out, dict):
        return result.to_py()
    every = js.Reflect.get(js.Array.prototype, "every")
    finite = to_js([js.Number.isFinite])
    vectors: list[object] = []
    for vector in data:
        if js.Array.isArray(vector) and vector.length and js.Reflect.apply(every, vector, finite):
            doubles = array("d")
            doubles.frombytes(js.Float64Array.new(vector).to_bytes())
            vectors.append(doubles)
        else:
            vectors.append(vector.to_py() if hasattr(vector, "to_py") else vector)
    out["data"] = vectors
    return out
