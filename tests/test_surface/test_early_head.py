"""What follows a whole answer's early head: the answer's own JSON body, whatever form the door
made it in (bytes, or an embedding answer's pieces); anything else is an internal error."""

from __future__ import annotations

import json

from surface.early_head import late_body
from surface.web import Pieces, WebResponse, json_response


def test_a_whole_body_follows_as_it_is() -> None:
    response = json_response(200, {"object": "list", "data": []})
    assert late_body(response) == b'{"object": "list", "data": []}'


def test_an_answer_in_pieces_follows_joined_in_their_order() -> None:
    pieces = [b'{"object": "list", ', b'"data": [1, 2', b"]}"]
    response = WebResponse(status=200, body=Pieces(chunks=iter(pieces)))
    assert late_body(response) == b"".join(pieces)


def test_no_body_at_all_is_an_internal_error() -> None:
    body = json.loads(late_body(WebResponse(status=200)))
    assert body == {"error": "internal_error", "message": "The request could not be completed."}
