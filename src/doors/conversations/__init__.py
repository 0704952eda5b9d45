"""Durable conversations: /api/v1/conversations, their stored turns and events."""
