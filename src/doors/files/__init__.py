"""POST /api/v1/files/markdown: a document converted to Markdown by Workers AI."""
