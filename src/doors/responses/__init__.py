"""The OpenAI Responses door: /v1/responses."""
