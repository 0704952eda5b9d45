"""A second turn after a reasoning answer, with the openai Python SDK: the SDK's own message
(content, reasoning_content, refusal, ...) is appended as it came and sent back. The Worker
passes its reasoning to the model as `reasoning` and drops the rest.

    AI_CHAT_URL=http://127.0.0.1:8787 python examples/second_turn_openai.py "Capital of France?"
"""

import os
import sys
from typing import Any

from openai import APIConnectionError, OpenAI

base = os.environ.get("AI_CHAT_URL", "http://127.0.0.1:8787").rstrip("/")
model = os.environ.get("AI_CHAT_MODEL", "@cf/openai/gpt-oss-20b")  # a model that reasons first
prompt = sys.argv[1] if len(sys.argv) > 1 else "What is the capital of France?"
follow_up = sys.argv[2] if len(sys.argv) > 2 else "And of Spain?"

client = OpenAI(base_url=f"{base}/v1", api_key="unused")
messages: list[Any] = [{"role": "user", "content": prompt}]
try:
    first = client.chat.completions.create(model=model, messages=messages, max_tokens=256)
    print(first.choices[0].message.content)
    messages += [first.choices[0].message, {"role": "user", "content": follow_up}]
    second = client.chat.completions.create(model=model, messages=messages, max_tokens=256)
    print(second.choices[0].message.content)
except APIConnectionError:
    sys.exit(
        f"Cannot reach {base}: is `make dev` running? Set AI_CHAT_URL to the Worker's address."
    )
