"""The official openai Python SDK's Responses API against this Worker (POST /v1/responses):
a streamed answer, printed as it arrives. The Worker stores it (`store` defaults to true): to
continue from it, see examples/openai_stored_responses.py.

    AI_CHAT_URL=http://127.0.0.1:8787 python examples/openai_responses.py "Hello!"
"""

import os
import sys

from openai import APIConnectionError, OpenAI

base = os.environ.get("AI_CHAT_URL", "http://127.0.0.1:8787").rstrip("/")
model = os.environ.get("AI_CHAT_MODEL", "@cf/google/gemma-4-26b-a4b-it")
prompt = sys.argv[1] if len(sys.argv) > 1 else "Say hello in five words."

# The Worker takes no key; the SDK insists on one, so any string will do.
client = OpenAI(base_url=f"{base}/v1", api_key="unused")
try:
    stream = client.responses.create(model=model, input=prompt, stream=True, max_output_tokens=256)
    for event in stream:
        if event.type == "response.output_text.delta":
            print(event.delta, end="", flush=True)
except APIConnectionError:
    sys.exit(
        f"Cannot reach {base}: is `make dev` running? Set AI_CHAT_URL to the Worker's address."
    )
print()
