"""A second turn after a reasoning answer, with LangChain's ChatOpenAI: the AIMessage it
returned goes back in the history as it is.

    AI_CHAT_URL=http://127.0.0.1:8787 python examples/second_turn_langchain.py "Capital of France?"
"""

import os
import sys

from langchain_core.messages import BaseMessage, HumanMessage
from langchain_openai import ChatOpenAI
from openai import APIConnectionError
from pydantic import SecretStr

base = os.environ.get("AI_CHAT_URL", "http://127.0.0.1:8787").rstrip("/")
model = os.environ.get("AI_CHAT_MODEL", "@cf/openai/gpt-oss-20b")  # a model that reasons first
prompt = sys.argv[1] if len(sys.argv) > 1 else "What is the capital of France?"
follow_up = sys.argv[2] if len(sys.argv) > 2 else "And of Spain?"

llm = ChatOpenAI(
    base_url=f"{base}/v1", api_key=SecretStr("unused"), model=model, max_completion_tokens=256
)
history: list[BaseMessage] = [HumanMessage(prompt)]
try:
    first = llm.invoke(history)
    print(first.text)
    history += [first, HumanMessage(follow_up)]
    print(llm.invoke(history).text)
except APIConnectionError:
    sys.exit(
        f"Cannot reach {base}: is `make dev` running? Set AI_CHAT_URL to the Worker's address."
    )
