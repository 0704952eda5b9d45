from gateway import run_options

NOTHING: dict[str, str] = {}


def test_no_gateway_without_the_var() -> None:
    assert run_options(NOTHING.get) == {}
    assert run_options({"AI_GATEWAY_ID": "  "}.get) == {}


def test_the_gateway_id_goes_in_the_options() -> None:
    assert run_options({"AI_GATEWAY_ID": " my-gw "}.get) == {"gateway": {"id": "my-gw"}}
