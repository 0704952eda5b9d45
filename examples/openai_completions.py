"""The official openai Python SDK's legacy Completions (`/v1/completions`) against this
Worker: one prompt, streamed, printed as it arrives.

AI_CHAT_URL=http://127.0.0.1:8787 python examples/openai_completions.py "Hello!"
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
    stream = client.completions.create(model=model, prompt=prompt, stream=True, max_tokens=256)
    for chunk in stream:
        if chunk.choices and chunk.choices[0].text:
            print(chunk.choices[0].text, end="", flush=True)
except APIConnectionError:
    sys.exit(
        f"Cannot reach {base}: is `make dev` running? Set AI_CHAT_URL to the Worker's address."
    )
print()
