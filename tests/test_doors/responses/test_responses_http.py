"""/v1/responses over HTTP on workerd, through its own Ai class, driven by the real clients:
the openai SDK's responses.create (streamed and not) and its stream helper, a function-call
loop, the OpenAI Agents SDK with its default (Responses) model and pydantic-ai's
OpenAIResponsesModel against our base URL (@ai-sdk/openai's: tests/js/runtime/)."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import openai
import pytest
from agents import Agent, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled
from conftest import Runtime, assert_stopped, expected_tokens, expected_usage, leave_mid_answer

pytestmark = pytest.mark.runtime

GEMMA = "@cf/google/gemma-4-26b-a4b-it"
GPT_OSS = "@cf/openai/gpt-oss-20b"
WEATHER: Any = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather in a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}
# What a message item's events look like around its deltas, and a reasoning item's.
MESSAGE_OPEN = ["response.output_item.added", "response.content_part.added"]
MESSAGE_CLOSE = [
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
]
# A reasoning item's text is both its content (reasoning_text) and its one summary part
# (issue 34): each delta comes as both.
REASONING_OPEN = [*MESSAGE_OPEN, "response.reasoning_summary_part.added"]
REASONING_DELTA = ["response.reasoning_text.delta", "response.reasoning_summary_text.delta"]
REASONING_CLOSE = [
    "response.reasoning_text.done",
    "response.content_part.done",
    "response.reasoning_summary_text.done",
    "response.reasoning_summary_part.done",
    "response.output_item.done",
]


def answer(text: str, *earlier: dict[str, str]) -> str:
    return "".join(expected_tokens([*earlier, {"role": "user", "content": text}]))


@pytest.mark.parametrize("model", [GEMMA, GPT_OSS])
def test_not_streamed_output_text_and_usage(
    client: openai.OpenAI, runtime: Runtime, model: str
) -> None:
    said = "[[pace:0]] hello responses"
    response = client.responses.create(
        model=model, input=said, instructions="be brief", max_output_tokens=200
    )
    system = {"role": "system", "content": "be brief"}
    assert (response.object, response.status, response.model) == ("response", "completed", model)
    assert response.output_text == answer(said, system)
    assert [item.type for item in response.output] == ["message"]
    usage = expected_usage([system, {"role": "user", "content": said}])
    assert response.usage is not None
    assert (
        response.usage.input_tokens,
        response.usage.output_tokens,
        response.usage.total_tokens,
    ) == (usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"])
    sent = runtime.last_call()["inputs"]
    # Nothing asked: AI_THINKING's default, each model's cheapest control (gpt-oss: "low").
    cheapest = (
        {"reasoning_effort": "low"}
        if model == GPT_OSS
        else {"chat_template_kwargs": {"enable_thinking": False}}
    )
    assert sent == {
        "messages": [system, {"role": "user", "content": said}],
        "stream": True,
        "max_tokens": 200,
        **cheapest,
    }, sent


def test_reasoning_is_a_reasoning_item_before_the_message(client: openai.OpenAI) -> None:
    said = "[[pace:0]] [[think:3]] capital of France?"
    response = client.responses.create(model=GPT_OSS, input=said, reasoning={"effort": "low"})
    reasoning, message = response.output
    assert reasoning.type == "reasoning" and reasoning.content is not None
    assert [(c.type, c.text) for c in reasoning.content] == [("reasoning_text", "Let me think")]
    assert message.type == "message" and response.output_text == answer(said)
    assert (
        response.usage is not None
        and response.usage.output_tokens
        == len(expected_tokens([{"role": "user", "content": said}])) + 3
    )


def test_reasoning_is_its_summary_too_and_usage_counts_reasoning_and_cached_tokens(
    client: openai.OpenAI, runtime: Runtime
) -> None:
    """Issue 34: the summary the AI SDK and pydantic-ai read, the content the Agents SDK reads,
    the same text once each; the reasoning and cached token counts in usage, not streamed and
    streamed; the output sent back as openai-python users send it reaches the model once."""
    said = f"[[pace:0]] [[think:3]] [[usage:reasoning]] {uuid.uuid4().hex[:8]}"
    first = client.responses.create(model=GPT_OSS, input=said)
    reasoning = first.output[0]
    assert reasoning.type == "reasoning"
    assert [(s.type, s.text) for s in reasoning.summary] == [("summary_text", "Let me think")]
    assert [(c.type, c.text) for c in reasoning.content or []] == [
        ("reasoning_text", "Let me think")
    ]
    assert first.usage is not None
    assert first.usage.output_tokens_details.reasoning_tokens == 3
    assert first.usage.input_tokens_details.cached_tokens == 0
    more = "[[pace:0]] [[think:2]] [[usage:reasoning]] and more"
    items: list[Any] = [
        {"role": "user", "content": said},
        *first.output,
        {"role": "user", "content": more},
    ]
    again = list(client.responses.create(model=GPT_OSS, input=items, stream=True))
    sent = runtime.last_call()["inputs"]["messages"]
    assert sent[1] == {
        "role": "assistant",
        "content": first.output_text,
        "reasoning": "Let me think",
    }
    completed = again[-1]
    assert completed.type == "response.completed" and completed.response.usage is not None
    usage = completed.response.usage
    assert usage.output_tokens_details.reasoning_tokens == 2
    # the model's prefix cache held the first call's prompt: the first user message
    assert usage.input_tokens_details.cached_tokens == len(said.split()) + 3, usage
    assert [
        (s.type, s.text)
        for s in completed.response.output[0].summary  # type: ignore[union-attr]
    ] == [("summary_text", "Let me")]


def test_streamed_events_in_the_order_the_sdk_parses_numbered_from_zero(
    client: openai.OpenAI,
) -> None:
    said = "[[pace:1]] [[think:2]] stream it"
    events = list(client.responses.create(model=GPT_OSS, input=said, stream=True))
    tokens = expected_tokens([{"role": "user", "content": said}])
    kinds = [e.type for e in events]
    expected = (
        ["response.created", "response.in_progress"]
        + REASONING_OPEN
        + REASONING_DELTA * 2
        + REASONING_CLOSE
        + MESSAGE_OPEN
        + ["response.output_text.delta"] * len(tokens)
        + MESSAGE_CLOSE
        + ["response.completed"]
    )
    assert kinds == expected, f"got {kinds}"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert [e.delta for e in events if e.type == "response.output_text.delta"] == tokens
    assert "".join(e.delta for e in events if e.type == "response.reasoning_text.delta") == "Let me"
    added = [e for e in events if e.type == "response.reasoning_summary_part.added"]
    deltas = [e for e in events if e.type == "response.reasoning_summary_text.delta"]
    texts = [e for e in events if e.type == "response.reasoning_summary_text.done"]
    parts = [e for e in events if e.type == "response.reasoning_summary_part.done"]
    item = events[2]
    assert item.type == "response.output_item.added" and item.item.type == "reasoning"
    at = {(e.item_id, e.output_index, e.summary_index) for e in added}
    at |= {(e.item_id, e.output_index, e.summary_index) for e in deltas}
    at |= {(e.item_id, e.output_index, e.summary_index) for e in texts}
    at |= {(e.item_id, e.output_index, e.summary_index) for e in parts}
    assert at == {(item.item.id, 0, 0)}
    assert [e.part.text for e in added] == [""]
    assert "".join(e.delta for e in deltas) == "Let me"
    assert [e.text for e in texts] == [e.part.text for e in parts] == ["Let me"]
    completed = events[-1]
    assert completed.type == "response.completed"
    assert (
        completed.response.output_text == "".join(tokens) and completed.response.usage is not None
    )
    assert len({e.response.id for e in events if hasattr(e, "response")}) == 1


def test_the_sdks_stream_helper_accumulates_the_final_response(client: openai.OpenAI) -> None:
    said = "[[pace:1]] [[think:2]] helper"
    with client.responses.stream(model=GPT_OSS, input=said) as stream:
        texts = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert "".join(texts) == final.output_text == answer(said)
    assert [o.type for o in final.output] == ["reasoning", "message"]


@pytest.mark.parametrize(("model", "stream"), [(GEMMA, False), (GPT_OSS, True)])
def test_a_function_call_loop(
    client: openai.OpenAI, runtime: Runtime, model: str, stream: bool
) -> None:
    """function_call -> function_call_output -> answer, the items sent back as the SDK gave them."""
    items: list[Any] = [{"role": "user", "content": "[[pace:0]] [[tool:get_weather]] Paris"}]
    first: openai.types.responses.Response
    if stream:
        with client.responses.stream(model=model, input=items, tools=[WEATHER]) as s:
            deltas = [e.delta for e in s if e.type == "response.function_call_arguments.delta"]
            first = s.get_final_response()
        assert "".join(deltas) == '{"city":"Paris"}', deltas
    else:
        first = client.responses.create(model=model, input=items, tools=[WEATHER])
    calls = [o for o in first.output if o.type == "function_call"]
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [
        ("get_weather", {"city": "Paris"})
    ], first.output
    assert first.status == "completed" and first.output_text == ""
    sent = runtime.last_call()["inputs"]
    assert sent["tools"] == [
        {"type": "function", "function": {k: v for k, v in WEATHER.items() if k != "type"}}
    ]
    items += first.output
    items.append(
        {"type": "function_call_output", "call_id": calls[0].call_id, "output": "sunny, 21 C"}
    )
    second = client.responses.create(model=model, input=items, tools=[WEATHER])
    assert second.output_text == f"The tool {calls[0].call_id} said: sunny, 21 C."
    sent = runtime.last_call()["inputs"]["messages"]
    assert sent[1:] == [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": calls[0].call_id,
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": calls[0].arguments},
                }
            ],
        },
        {"role": "tool", "content": "sunny, 21 C", "tool_call_id": calls[0].call_id},
    ], sent


def test_the_agents_sdk_runs_a_tool_and_sends_the_reasoning_back(runtime: Runtime) -> None:
    set_tracing_disabled(True)
    ran: list[str] = []

    @function_tool
    def get_weather(city: str) -> str:
        """Weather in a city."""
        ran.append(city)
        return f"sunny in {city}"

    items: list[str] = []
    events: list[str] = []

    async def main() -> tuple[object, object]:
        client = openai.AsyncOpenAI(
            base_url=runtime.url + "/v1", api_key="unused", max_retries=0, timeout=30
        )
        model = OpenAIResponsesModel(model=GPT_OSS, openai_client=client)
        agent = Agent(name="weather", instructions="be brief", model=model, tools=[get_weather])
        done = await Runner.run(agent, "[[pace:0]] [[think:2]] [[tool:get_weather]] Paris")
        items.extend(type(item).__name__ for item in done.new_items)
        streamed = Runner.run_streamed(agent, "[[pace:1]] [[think:2]] and hello")
        async for event in streamed.stream_events():
            if event.type == "run_item_stream_event":
                events.append(event.name)
        await client.close()
        return done.final_output, streamed.final_output

    before = len(runtime.calls())
    done, streamed = asyncio.run(main())
    # what the SDK makes of the output: the reasoning item is its own ReasoningItem
    assert items == [
        "ReasoningItem",
        "ToolCallItem",
        "ToolCallOutputItem",
        "ReasoningItem",
        "MessageOutputItem",
    ], items
    assert events == ["reasoning_item_created", "message_output_created"], events
    calls = runtime.calls()[before:]
    assert ran == ["Paris"]
    tool_turn = calls[1]["inputs"]["messages"]
    call_id = tool_turn[2]["tool_calls"][0]["id"]
    assert done == f"The tool {call_id} said: sunny in Paris."
    assert tool_turn[2]["reasoning"] == "Let me", tool_turn[2]
    assert tool_turn[3] == {"role": "tool", "content": "sunny in Paris", "tool_call_id": call_id}
    system = {"role": "system", "content": "be brief"}
    assert streamed == answer("[[pace:1]] [[think:2]] and hello", system)
    assert len(calls) == 3, [c["inputs"]["messages"] for c in calls]


def test_without_storage_references_are_refused_saying_why(stateless_runtime: Runtime) -> None:
    """A deployment with no RESPONSES binding: stateless as before (stored: test_responses_store_http)."""
    rt = stateless_runtime
    before = len(rt.calls())
    with openai.OpenAI(base_url=rt.url + "/v1", api_key="x", max_retries=0, timeout=30) as client:
        with pytest.raises(openai.BadRequestError) as info:
            client.responses.create(model=GEMMA, input="x", previous_response_id="resp_1")
        assert info.value.body == {
            "message": "previous_response_id: not supported: this deployment stores nothing (no RESPONSES binding): send the whole conversation in input",
            "type": "invalid_request_error",
            "param": "previous_response_id",
            "code": "unsupported_parameter",
        }
        with pytest.raises(openai.BadRequestError) as info:
            client.responses.create(model=GEMMA, input="x", store=True)
        assert info.value.code == "unsupported_parameter" and "store" in info.value.message
        assert len(rt.calls()) == before, "the model was called"
        made = client.responses.create(model=GEMMA, input="[[pace:0]] x")
        assert made.model_dump()["store"] is False


def test_stop_strings_and_a_json_format(client: openai.OpenAI, runtime: Runtime) -> None:
    said = "[[pace:0]] where from?"
    text = answer(said)
    cut = client.responses.create(model=GEMMA, input=said, extra_body={"stop": ["built-in"]})
    assert cut.output_text == text[: text.index("built-in")] and cut.status == "completed"
    schema: Any = {
        "type": "json_schema",
        "name": "answer",
        "schema": {"type": "object", "properties": {"answer": {"type": "string"}}},
    }
    shaped = client.responses.create(
        model=GEMMA, input="[[pace:0]] json please", text={"format": schema}
    )
    assert json.loads(shaped.output_text) == {"answer": answer("[[pace:0]] json please")}
    assert runtime.last_call()["inputs"]["response_format"] == {
        "type": "json_schema",
        "json_schema": schema["schema"],
    }


def test_a_failure_mid_stream_is_response_failed_and_a_502_when_whole(
    client: openai.OpenAI,
) -> None:
    events = list(
        client.responses.create(
            model=GEMMA, input="[[fault:midstream]] [[pace:0]] boom", stream=True
        )
    )
    failed = events[-1]
    assert failed.type == "response.failed", [e.type for e in events]
    assert failed.response.error is not None and failed.response.error.code == "upstream_error"  # type: ignore[comparison-overlap]
    assert [o.status for o in failed.response.output] == ["incomplete"]
    with pytest.raises(openai.APIStatusError) as info:
        client.responses.create(model=GEMMA, input="[[fault:midstream]] [[pace:0]] boom")
    assert info.value.status_code == 502 and info.value.body == {
        "message": "The model stream failed.",
        "type": "server_error",
        "param": None,
        "code": "upstream_error",
    }


def test_a_client_that_leaves_stops_the_model(runtime: Runtime) -> None:
    body = {
        "model": GEMMA,
        "input": "[[pace:40]] [[tokens:200]] long answer please",
        "stream": True,
    }
    leave_mid_answer(runtime, "/v1/responses", body, b"event: response.output_text.delta")
    call = runtime.wait_for(
        lambda c: c["clientClosedAt"] is not None or c["finishedAt"] is not None
    )
    assert_stopped(call)


def test_pydantic_ais_responses_model_shows_the_reasoning_once(runtime: Runtime) -> None:
    """pydantic-ai's OpenAIResponsesModel with its default settings (issue 34: its ThinkingPart
    was empty): one ThinkingPart with the reasoning, not streamed and streamed, its content
    (reasoning_text) kept beside it as raw_content; sent back, it reaches the model once."""
    from pydantic_ai import Agent as PydanticAgent
    from pydantic_ai.messages import ModelResponse, TextPart, ThinkingPart
    from pydantic_ai.models.openai import OpenAIResponsesModel as PydanticResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider

    said = "[[pace:0]] [[think:3]] capital of France?"

    def shown(response: ModelResponse) -> list[tuple[str, str]]:
        return [
            (type(p).__name__, p.content)
            for p in response.parts
            if isinstance(p, (ThinkingPart, TextPart))
        ]

    async def main() -> list[ModelResponse]:
        client = openai.AsyncOpenAI(
            base_url=runtime.url + "/v1", api_key="unused", max_retries=0, timeout=30
        )
        model = PydanticResponsesModel(GPT_OSS, provider=OpenAIProvider(openai_client=client))
        agent = PydanticAgent(model)
        whole = await agent.run(said)
        async with agent.run_stream("[[pace:1]] [[think:2]] streamed") as run:
            await run.get_output()
            streamed = run.all_messages()[-1]
        await agent.run("[[pace:0]] and then", message_history=whole.all_messages())
        await client.close()
        got = [whole.all_messages()[-1], streamed]
        return [m for m in got if isinstance(m, ModelResponse)]

    whole, streamed = asyncio.run(main())
    assert shown(whole) == [("ThinkingPart", "Let me think"), ("TextPart", answer(said))]
    thinking = whole.parts[0]
    assert isinstance(thinking, ThinkingPart)
    assert thinking.provider_details == {"raw_content": ["Let me think"]}
    assert [k for k, _ in shown(streamed)] == ["ThinkingPart", "TextPart"]
    assert shown(streamed)[0] == ("ThinkingPart", "Let me")
    sent = runtime.last_call()["inputs"]["messages"]
    assert sent[:2] == [
        {"role": "user", "content": said},
        {"role": "assistant", "content": answer(said), "reasoning": "Let me think"},
    ], sent
