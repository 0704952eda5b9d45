"""Request checks every door shares: the chat request, the messages (text and images) and the
JSON limits."""
