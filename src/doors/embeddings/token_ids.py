"""OpenAI's cl100k_base token ids back to text, for the clients that send ids to /v1/embeddings
(LangChain's OpenAIEmbeddings does by default): Workers AI's embedding models read text.

The table is cl100k_base.bin beside this module, made by scripts/token-table.mjs from the pinned
js-tiktoken (`make setup`), uploaded as a Data module by wrangler's default `**/*.bin` rule. On
workerd a Data module is a file beside the Python modules, so it is read with open(), once per
isolate and only when ids arrive: never at import, so neither the cold start nor the memory
snapshot carries it (1 MB, ~0.2 ms to read: bench/notes/2026-11-26-token-ids.md).

Decoding is tiktoken's decode(): the tokens' bytes joined, then UTF-8 with errors="replace". A
character whose bytes a client split between two arrays (LangChain cuts long texts every 8,191
tokens) becomes U+FFFD at the cut, as tiktoken decodes it.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

TABLE_FILE = Path(__file__).with_name("cl100k_base.bin")
MAGIC = b"cl100k\0\0"
_HEADER = 16  # MAGIC, uint32 count, uint32 reserved


class TableError(Exception):
    """The table file is missing or not one scripts/token-table.mjs wrote."""


class UnknownToken(Exception):
    def __init__(self, position: int, value: object) -> None:
        super().__init__(position, value)
        self.position = position
        self.value = value


class TokenTable:
    """cl100k_base's tokens by id: token i is data[offsets[i]:offsets[i + 1]]; an id with no
    token (100256, 100261-100275) is empty."""

    def __init__(self, blob: bytes) -> None:
        if len(blob) < _HEADER or blob[:8] != MAGIC:
            raise TableError("not a cl100k_base token table")
        (count,) = struct.unpack_from("<I", blob, 8)
        end = _HEADER + 4 * (count + 1)
        if count == 0 or len(blob) < end:
            raise TableError("the token table is cut short")
        raw = memoryview(blob)[_HEADER:end]
        if sys.byteorder == "little":  # Wasm and x86/ARM hosts: the bytes are the array
            offsets: memoryview | list[int] = raw.cast("I")
        else:  # pragma: no cover
            offsets = list(struct.unpack("<%dI" % (count + 1), raw))
        if len(blob) - end != offsets[count]:
            raise TableError("the token table's bytes do not match its offsets")
        self.count: int = count
        self._offsets = offsets
        self._data = blob[end:]

    def token(self, token_id: int) -> bytes:
        """One token's bytes; b"" for an id with no token."""
        return self._data[self._offsets[token_id] : self._offsets[token_id + 1]]

    def decode(self, ids: list[object]) -> str:
        """The text of `ids`, or UnknownToken for the first that is not a cl100k_base id (not an
        int, out of range, or an id with no token)."""
        offsets, data, count = self._offsets, self._data, self.count
        parts = []
        for position, token_id in enumerate(ids):
            if type(token_id) is not int or not 0 <= token_id < count:
                raise UnknownToken(position, token_id)
            start, end = offsets[token_id], offsets[token_id + 1]
            if start == end:
                raise UnknownToken(position, token_id)
            parts.append(data[start:end])
        return b"".join(parts).decode("utf-8", errors="replace")


_loaded: dict[Path, TokenTable] = {}  # the isolate's table, read on first use


def table(path: Path = TABLE_FILE) -> TokenTable:
    """The table, read from `path` on first use; TableError when it is missing or damaged."""
    if path not in _loaded:
        try:
            blob = path.read_bytes()
        except OSError as error:
            why = f"{path.name} is missing ({error.strerror}); run `make setup`"
            raise TableError(why) from None
        _loaded[path] = TokenTable(blob)
    return _loaded[path]
