"""POST /api/v1/files/markdown: a document (a PDF, an Office or OpenDocument file, HTML) as
Markdown, converted by the AI binding's toMarkdown (Workers AI's conversion), so that a page can
attach it to a message as text. The body is the file itself; `X-File-Name` names it (the model
receives the Markdown with that name). Nothing is stored."""

from __future__ import annotations

from typing import Any, Protocol
from urllib.parse import unquote

from base.errors import ApiError, clip
from surface.body import read_body
from surface.guard import PAGE_OR_KEY
from surface.routing import Api, Context, Route, app_error
from surface.web import WebResponse, json_response

PATH = "/api/v1/files/markdown"
MAX_FILE_BYTES = 10 * 1024 * 1024  # one document; its Markdown must still fit a message
# What Workers AI's conversion reads that a file of text is not (the page reads those itself).
DOCUMENT_TYPES = {
    "application/pdf": "PDF",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "Word",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "Excel",
    "application/vnd.oasis.opendocument.text": "OpenDocument text",
    "application/vnd.oasis.opendocument.spreadsheet": "OpenDocument spreadsheet",
    "text/html": "HTML",
}


class Converter(Protocol):
    async def to_markdown(self, name: str, mime: str, data: bytes) -> dict[str, Any]:
        """env.AI.toMarkdown({name, blob}): {"format": "markdown", "data", "tokens"} or
        {"format": "error", "error"}; raises ApiError when the binding fails."""
        ...


async def markdown(ctx: Context) -> WebResponse:
    headers = ctx.request.headers
    mime = (headers.get("content-type") or "").split(";", 1)[0].strip().lower()
    if mime not in DOCUMENT_TYPES:
        raise ApiError(
            415,
            "unsupported_media_type",
            f"Content-Type {clip(mime) if mime else 'none'} is not a document Workers AI converts; "
            f"send one of {', '.join(DOCUMENT_TYPES)}",
        )
    name = unquote(headers.get("x-file-name") or "").strip()[:200] or "document"
    data = await read_body(ctx.request.body, headers.get("content-length"), MAX_FILE_BYTES)
    if not data:
        raise ApiError(400, "invalid_field", "body: the file is empty", param="body")
    convert = getattr(ctx.model, "to_markdown", None)
    if convert is None:
        raise ApiError(501, "conversion_unavailable", "This deployment cannot convert documents.")
    result = await convert(name, mime, data)
    if result.get("format") != "markdown" or not isinstance(result.get("data"), str):
        said = str(result.get("error") or "no Markdown came back")
        raise ApiError(
            422, "conversion_failed", f"{clip(name)}: Workers AI could not convert it: {clip(said)}"
        )
    return json_response(
        200,
        {"name": name, "type": mime, "markdown": result["data"], "tokens": result.get("tokens")},
    )


FILES_API = Api(
    prefix="/api/v1/files",
    routes={
        PATH: Route(
            methods={"POST": markdown}, render_error=app_error, access=PAGE_OR_KEY, metered=True
        ),
    },
    render_error=app_error,
)
