"""The AI SDK's door: /api/v1/ui-chat, the UI message stream."""
