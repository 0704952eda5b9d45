from surface.web import JSON_HEADERS, WebResponse, json_response, without_body


def test_json_response_sends_utf8_as_is() -> None:
    response = json_response(200, {"text": "é🌍"}, (("x", "1"),))
    assert response.body == '{"text": "é🌍"}'.encode()
    assert response.headers == (*JSON_HEADERS, ("x", "1"))


def test_a_lone_surrogate_is_sent_as_an_escape_not_a_crash() -> None:
    assert json_response(200, {"text": "é\ud800"}).body == b'{"text": "\\u00e9\\ud800"}'


def test_without_body_keeps_every_header() -> None:
    get = json_response(200, {"a": 1}, (("x", "1"),))
    assert without_body(get) == WebResponse(status=200, headers=get.headers)
    assert without_body(WebResponse(status=204)) == WebResponse(status=204)
