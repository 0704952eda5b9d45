"""The official openai Python SDK's legacy Completions (`/v1/completions`) against this
Worker: one prompt, streamed, printed as it arrives; several prompts, sent as one list in one
request (a choice per prompt, answered at the same time), printed one per line.

AI_CHAT_URL=http://127.0.0.1:8787 python examples/openai_completions.py "Hello!"
AI_CHAT_URL=http://127.0.0.1:8787 python examples/openai_completions.py "Hello!" "Bonjour !"
"""

import os
import sys

from openai import APIConnectionError, OpenAI

base = os.environ.get("AI_CHAT_URL", "http://127.0.0.1:8787").rstrip("/")
model = os.environ.get("AI_CHAT_MODEL", "@cf/google/gemma-4-26b-a4b-it")
prompts = sys.argv[1:] or ["Say hello in five words."]

# The Worker takes no key; the SDK insists on one, so any string will do.
client = OpenAI(base_url=f"{base}/v1", api_key="unused")
try:
    if len(prompts) == 1:
        stream = client.completions.create(
            model=model, prompt=prompts[0], stream=True, max_tokens=256
        )
        for chunk in stream:
            if chunk.choices and chunk.choices[0].text:
                print(chunk.choices[0].text, end="", flush=True)
        print()
    else:
        # A stream carries one prompt here; a list is answered whole, choice i for prompt i.
        whole = client.completions.create(model=model, prompt=prompts, max_tokens=256)
        for choice in whole.choices:
            print(f"{choice.index}: {choice.text}")
except APIConnectionError:
    sys.exit(
        f"Cannot reach {base}: is `make dev` running? Set AI_CHAT_URL to the Worker's address."
    )
