"""The frames Workers AI sends nearly always, matched by regular expressions instead of
json.loads (the slow part of reading a frame): a native frame whose text needs no unescaping,
and an OpenAI-shaped chunk that carries only text (and, late 2026, its usage and noise). What
they mean is frames.py's; these say only which frames may skip the JSON path, and what a match
holds. Anything they do not take goes to json.loads, so a miss costs time, never correctness.
"""

from __future__ import annotations

import re

# The native frame as Workers AI sends it, when its text needs no JSON unescaping:
# the text is then the match itself, and json.loads (the slow part) is skipped.
PLAIN_NATIVE = re.compile(
    r'\{"response":"([^"\\\x00-\x1f]*)"(?:,"tool_calls":\[\])?(?:,"p":"[^"\\\x00-\x1f]*")?\}'
)

# Whole events of that frame, one after another (UpstreamDecoder's batch path): one data line
# each ("data:" and at most one space, as SSE strips it), ended by a blank line, no CR.
PLAIN_NATIVE_EVENT = re.compile(r"data: ?" + PLAIN_NATIVE.pattern + r"\n\n")

# The same for the OpenAI-shaped chunk, in its key order, when it carries only text: no
# tool_calls or finish_reason, and a delta of up to four role/content/reasoning_content/
# reasoning pairs, each key and value captured (a value is a string with nothing to unescape,
# or null: None). A value holds no quote, so no '":"' in it can pass for a pair. More pairs
# (only repeats do that) and anything else take the JSON path. Late 2026 (field-2026-11-28.md)
# every model streams it with noise (token_ids, prompt_token_ids, kv_transfer_params, p), its
# running usage on every delta (captured: prompt, completion, total) and `choices: []`
# heartbeats that carry only usage: all of that is taken here too.
_PLAIN = r'"[^"\\\x00-\x1f]*+"'
_INT = r"(?:0|[1-9][0-9]*+)"
_IDS = r"\[(?:[0-9]++(?:,[0-9]++)*+)?\]"
_PAIR = r'"(role|content|reasoning_content|reasoning)":(?:"([^"\\\x00-\x1f]*+)"|null)'
_CHUNK = (
    r'\{"id":' + _PLAIN + r',"object":"chat\.completion\.chunk"(?:,"created":' + _INT + ")?"
    r'(?:,"model":'
    + _PLAIN
    + r')?,"choices":(?:\[\]|\[\{"index":0,"delta":\{'
    + "(?:"
    + _PAIR
    + ("(?:," + _PAIR + ")?") * 3
    + ")?"
    + r'\}(?:,"logprobs":null)?,"finish_reason":null(?:,"stop_reason":null)?'
    + r'(?:,"token_ids":'
    + _IDS
    + r")?\}\])"
    + r'(?:,"usage":\{"prompt_tokens":('
    + _INT
    + r'),"completion_tokens":('
    + _INT
    + r")"
    + r',"total_tokens":('
    + _INT
    + r")\})?"
    + r'(?:,"p":'
    + _PLAIN
    + r")?"
    + r'(?:,"prompt_token_ids":'
    + _IDS
    + r')?(?:,"kv_transfer_params":null)?\}'
)
PLAIN_CHUNK = re.compile(_CHUNK)

# Whole events of that chunk, one after another (UpstreamDecoder's batch path).
PLAIN_CHUNK_EVENT = re.compile(r"data: ?" + _CHUNK + r"\n\n")

# A delta's content, reasoning_content and reasoning.
Delta = tuple[object, object, object]


def fast(payload: str) -> Delta | None:
    """The delta of a frame that carries only text needing no unescaping (nearly every frame
    Workers AI sends), read by one regular expression; None sends the frame to json.loads."""
    plain = PLAIN_NATIVE.fullmatch(payload)
    if plain is not None:
        return plain.group(1), None, None
    chunk = PLAIN_CHUNK.fullmatch(payload)
    if chunk is None:
        return None
    return chunk_delta(chunk)


def chunk_delta(chunk: re.Match[str]) -> Delta:
    k1, v1, k2, v2, k3, v3, k4, v4 = chunk.group(1, 2, 3, 4, 5, 6, 7, 8)
    if k2 is None:  # one pair, or none (a heartbeat): most chunks
        return (v1, None, None) if k1 == "content" else _pick({k1: v1})
    return _pick({k1: v1, k2: v2, k3: v3, k4: v4})  # a repeated key: the last wins, as in JSON


def _pick(delta: dict[str | None, str | None]) -> Delta:
    return delta.get("content"), delta.get("reasoning_content"), delta.get("reasoning")
