"""The OpenAI Chat Completions door: /v1/chat/completions and /v1/models."""
