"""The handle on a streamed answer from env.AI.run() before a pipe takes it (shell/jsstream.py):
what cancels the model's stream when nothing will read it."""

from __future__ import annotations

import js

from shell.js_glue import ignore


class JsByteSource:
    """A streamed answer from env.AI.run(). The shell hands the untouched stream to a
    RelayPipe, for a streamed answer and a collected one alike; after cancel() nothing reads
    the stream again."""

    __slots__ = ("_stopped", "stream")

    def __init__(self, stream: js.ReadableStream) -> None:
        self.stream = stream
        self._stopped = False

    def cancel(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        if not self.stream.locked:
            ignore(self.stream.cancel())
