"""The Worker shell: converts a Workers request to the core's values, and back."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

import js
from pyodide.ffi import JsException
from workers import Response, WorkerEntrypoint

import app
import openai_compat  # noqa: F401  (registers the /v1 routes)

from errors import ApiError
from jsstream import AbortWatch, JsByteSource, OutgoingStream, RelayPipe, iter_body
from relay import ByteSource, drive
from settings import Lookup
from web import WebRequest, WebResponse


class _OneShot:
    """A non-streamed Workers AI result, replayed as the stream it would have been."""

    def __init__(self, frame: Any) -> None:
        self._data: bytes | None = b"data: %s\n\ndata: [DONE]\n\n" % json.dumps(frame).encode()

    async def read(self) -> bytes | None:
        data, self._data = self._data, None
        return data

    def cancel(self) -> None:
        self._data = None


class WorkersAi:
    def __init__(self, env: Any, watch: AbortWatch) -> None:
        self._env = env
        self._watch = watch

    async def stream(self, model: str, inputs: dict[str, Any]) -> ByteSource:
        binding = getattr(self._env, "AI", None)
        if binding is None:
            raise ApiError(500, "server_misconfigured", "The AI binding is not configured.")
        try:
            result = await binding.run(model, inputs)
        except JsException as exc:
            raise app.UpstreamFailure(str(exc)) from exc
        if getattr(getattr(result, "constructor", None), "name", None) == "ReadableStream":
            # The client leaving stops the upstream read, streamed answer or not.
            return JsByteSource(result, self._watch)
        return _OneShot(result)


class _Headers(Mapping[str, str]):
    """The request's JS Headers, read one name at a time: the core asks for a few of them,
    and copying them all costs two or three JS crossings per header on every request."""

    def __init__(self, headers: Any) -> None:
        self._headers = headers

    def __getitem__(self, name: str) -> str:
        value = self._headers.get(name)
        if not isinstance(value, str):  # a missing header is JS null (pyodide.ffi.jsnull)
            raise KeyError(name)
        return value

    def __iter__(self) -> Iterator[str]:
        return (str(name) for name in self._headers.keys())

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _lookup(env: Any) -> Lookup:
    def get(key: str) -> str | None:
        value = getattr(env, key, None)
        return value if isinstance(value, str) else None

    return get


class Default(WorkerEntrypoint):  # type: ignore[misc]  # the SDK has no stubs
    async def fetch(self, request: Any) -> Response:
        raw = request.js_object
        url = str(raw.url)
        web = WebRequest(
            method=str(raw.method),
            url=url,
            path=urlsplit(url).path,
            headers=_Headers(raw.headers),
            body=iter_body(raw),
        )
        watch = AbortWatch(raw.signal)
        try:
            response = await app.handle(web, _lookup(self.env), WorkersAi(self.env, watch))
        except BaseException:
            watch.release()
            raise
        return _to_response(response, watch)


def _to_response(response: WebResponse, watch: AbortWatch) -> Response:
    headers = js.Headers.new()
    for name, value in response.headers:
        headers.append(name, value)
    body: Any
    if isinstance(response.body, bytes):
        watch.release()
        body = response.body or None
    else:
        source, relay = response.body.source, response.body.relay
        if isinstance(source, JsByteSource) and source.untouched:
            body = RelayPipe(source.stream, relay, watch.signal).stream
            watch.release()  # the pipe follows request.signal itself
        else:
            # Released by the stream when it ends, however it ends.
            body = OutgoingStream(drive(source, relay), source.cancel, watch).stream
    return Response(body, status=response.status, headers=headers)
