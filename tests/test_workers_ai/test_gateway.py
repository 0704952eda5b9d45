from workers_ai.gateway import run_options

NOTHING: dict[str, str] = {}


def test_no_gateway_without_the_var() -> None:
    assert run_options(NOTHING.get) == {}
    assert run_options({"AI_GATEWAY_ID": "  "}.get) == {}


def test_the_gateway_id_goes_in_the_options() -> None:
    assert run_options({"AI_GATEWAY_ID": " my-gw "}.get) == {"gateway": {"id": "my-gw"}}


def test_cache_options_and_the_key_id_as_metadata() -> None:
    env = {"AI_GATEWAY_ID": "gw", "AI_GATEWAY_CACHE_TTL": "300", "AI_GATEWAY_SKIP_CACHE": "1"}
    assert run_options(env.get, "0123456789abcdef") == {
        "gateway": {
            "id": "gw",
            "cacheTtl": 300,
            "skipCache": True,
            "metadata": {"api_key_id": "0123456789abcdef"},
        }
    }
    assert run_options({"AI_GATEWAY_ID": "gw", "AI_GATEWAY_SKIP_CACHE": "0"}.get) == {
        "gateway": {"id": "gw"}
    }
    assert (
        run_options({"AI_GATEWAY_CACHE_TTL": "300"}.get, "0123456789abcdef") == {}
    )  # no gateway, no options


def test_the_owner_hash_as_metadata() -> None:
    env = {"AI_GATEWAY_ID": "gw"}.get
    assert run_options(env, None, "0123456789abcdef") == {
        "gateway": {"id": "gw", "metadata": {"owner": "0123456789abcdef"}}
    }
    assert run_options(env, "k1", "0123456789abcdef")["gateway"]["metadata"] == {
        "api_key_id": "k1",
        "owner": "0123456789abcdef",
    }
