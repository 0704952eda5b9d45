"""LangChain's ChatOpenAI against this Worker's OpenAI-compatible endpoint, streamed.

AI_CHAT_URL=http://127.0.0.1:8787 python examples/langchain_python.py "Hello!"
"""

import os
import sys

from langchain_openai import ChatOpenAI
from openai import APIConnectionError
from pydantic import SecretStr

base = os.environ.get("AI_CHAT_URL", "http://127.0.0.1:8787").rstrip("/")
model = os.environ.get("AI_CHAT_MODEL", "@cf/google/gemma-4-26b-a4b-it")
prompt = sys.argv[1] if len(sys.argv) > 1 else "Say hello in five words."

# The Worker takes no key; the client insists on one, so any string will do.
llm = ChatOpenAI(
    base_url=f"{base}/v1", api_key=SecretStr("unused"), model=model, max_completion_tokens=256
)
try:
    for chunk in llm.stream([("user", prompt)]):
        print(chunk.text, end="", flush=True)
except APIConnectionError:
    sys.exit(
        f"Cannot reach {base}: is `make dev` running? Set AI_CHAT_URL to the Worker's address."
    )
print()
