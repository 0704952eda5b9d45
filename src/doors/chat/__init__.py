"""POST /api/v1/chat and GET /api/v1/models: the page's own SSE events."""
