"""The OpenAI Embeddings door: /v1/embeddings over Workers AI embedding models."""
