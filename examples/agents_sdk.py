"""The OpenAI Agents SDK against this Worker, with its default model class (the Responses API,
POST /v1/responses): an agent run to its final output.

    AI_CHAT_URL=http://127.0.0.1:8787 python examples/agents_sdk.py "Hello!"
"""

import logging
import os
import sys

from agents import Agent, ModelSettings, OpenAIResponsesModel, Runner, set_tracing_disabled
from openai import APIConnectionError, AsyncOpenAI

base = os.environ.get("AI_CHAT_URL", "http://127.0.0.1:8787").rstrip("/")
model = os.environ.get("AI_CHAT_MODEL", "@cf/google/gemma-4-26b-a4b-it")
prompt = sys.argv[1] if len(sys.argv) > 1 else "Say hello in five words."

set_tracing_disabled(True)  # traces go to OpenAI's servers otherwise
# The SDK logs a failed call ("Error getting response") before raising it: the error says enough.
logging.getLogger("openai.agents").addHandler(logging.NullHandler())
client = AsyncOpenAI(base_url=f"{base}/v1", api_key="unused")
agent = Agent(
    name="assistant",
    model=OpenAIResponsesModel(model=model, openai_client=client),
    model_settings=ModelSettings(max_tokens=256),
)
try:
    print(Runner.run_sync(agent, prompt).final_output)
except APIConnectionError:
    sys.exit(
        f"Cannot reach {base}: is `make dev` running? Set AI_CHAT_URL to the Worker's address."
    )
