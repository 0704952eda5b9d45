"""LangChain's OpenAIEmbeddings against this Worker's `/v1/embeddings`: two texts embedded,
and how alike they are (the cosine of their vectors).

AI_CHAT_URL=http://127.0.0.1:8787 python examples/langchain_embeddings.py "a cat" "a kitten"
"""

import math
import os
import sys

from langchain_openai import OpenAIEmbeddings
from openai import APIConnectionError
from pydantic import SecretStr

base = os.environ.get("AI_CHAT_URL", "http://127.0.0.1:8787").rstrip("/")
model = os.environ.get("AI_EMBEDDING_MODEL", "@cf/baai/bge-m3")
texts = sys.argv[1:3] if len(sys.argv) > 2 else ["a cat", "a kitten"]

# The Worker takes no key; the client insists on one, so any string will do. By default
# LangChain sends OpenAI's cl100k_base token ids (tiktoken downloads its table once), cutting a
# text longer than 8,191 tokens into pieces whose vectors it averages; the Worker turns the ids
# back into text for the Workers AI model. check_embedding_ctx_length=False sends the texts
# themselves: no tiktoken, and a text longer than the model's window is an error instead.
# Any number of texts works: LangChain sends up to 1,000 a request, the Worker 100 a model call.
embeddings = OpenAIEmbeddings(
    base_url=f"{base}/v1",
    api_key=SecretStr("unused"),
    model=model,
    # check_embedding_ctx_length=False,
)
try:
    first, second = embeddings.embed_documents(texts)
except APIConnectionError:
    sys.exit(
        f"Cannot reach {base}: is `make dev` running? Set AI_CHAT_URL to the Worker's address."
    )
except OSError as error:  # tiktoken's first download of its table (requests' errors are OSErrors)
    sys.exit(
        f"tiktoken could not download cl100k_base ({type(error).__name__}): without internet"
        " access, uncomment check_embedding_ctx_length=False above."
    )
cosine = sum(a * b for a, b in zip(first, second, strict=True)) / (
    math.sqrt(sum(a * a for a in first)) * math.sqrt(sum(b * b for b in second))
)
print(f"{len(first)} dimensions; cosine similarity {cosine:.4f}")
