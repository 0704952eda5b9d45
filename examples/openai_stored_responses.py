"""Stored responses with the openai Python SDK's Responses API (POST /v1/responses): the Worker
keeps each response (`store` defaults to true, as OpenAI's does), so a second turn sends only
its new message and `previous_response_id`; then the response is read back, its input items
listed, and both deleted.

A stored response belongs to whoever made it: the API key, or else the owner token sent in
`X-Owner-Token` (any 32 to 64 hex digits, kept by the client). Another key or token gets 404.

    AI_CHAT_URL=http://127.0.0.1:8787 python examples/openai_stored_responses.py \
        "Capital of France?" "And of Spain?"
"""

import os
import secrets
import sys

from openai import APIConnectionError, NotFoundError, OpenAI

base = os.environ.get("AI_CHAT_URL", "http://127.0.0.1:8787").rstrip("/")
model = os.environ.get("AI_CHAT_MODEL", "@cf/google/gemma-4-26b-a4b-it")
prompt = sys.argv[1] if len(sys.argv) > 1 else "What is the capital of France?"
follow_up = sys.argv[2] if len(sys.argv) > 2 else "And of Spain?"
# Keep the token to find the responses again later; a fresh one is a new owner.
token = os.environ.get("AI_CHAT_OWNER_TOKEN") or secrets.token_hex(16)

# The SDK insists on a key; without API_KEYS on the Worker any string will do.
client = OpenAI(base_url=f"{base}/v1", api_key="unused", default_headers={"X-Owner-Token": token})
try:
    first = client.responses.create(model=model, input=prompt, max_output_tokens=256)
    print(first.output_text)
    second = client.responses.create(
        model=model, input=follow_up, previous_response_id=first.id, max_output_tokens=256
    )
    print(second.output_text)
    kept = client.responses.retrieve(second.id)  # GET /v1/responses/{id}: as it was returned
    print(
        f"stored: {kept.status}, continued from the first: {kept.previous_response_id == first.id}"
    )
    for item in client.responses.input_items.list(second.id, order="asc").data:
        text = " ".join(getattr(part, "text", "") for part in getattr(item, "content", []))
        print(f"input item: {item.type} {getattr(item, 'role', '')}: {text}")
    for response in (second, first):
        client.responses.delete(response.id)
    try:
        client.responses.retrieve(first.id)
    except NotFoundError:
        print("deleted: reading it again is 404")
except APIConnectionError:
    sys.exit(
        f"Cannot reach {base}: is `make dev` running? Set AI_CHAT_URL to the Worker's address."
    )
