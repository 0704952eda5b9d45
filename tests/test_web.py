from web import JSON_HEADERS, json_response


def test_json_response_sends_utf8_as_is() -> None:
    response = json_response(200, {"text": "é🌍"}, (("x", "1"),))
    assert response.body == '{"text": "é🌍"}'.encode()
    assert response.headers == JSON_HEADERS + (("x", "1"),)


def test_a_lone_surrogate_is_sent_as_an_escape_not_a_crash() -> None:
    assert json_response(200, {"text": "é\ud800"}).body == b'{"text": "\\u00e9\\ud800"}'
