"""The OpenAI (legacy) Completions door: /v1/completions over the same relay as chat."""
