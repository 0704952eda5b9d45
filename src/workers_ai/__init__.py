"""Workers AI: the stream decoder (UTF-8, SSE lines, frames), model facts (catalog, context
budget), run() errors, fallbacks, the AI Gateway, session affinity, and the one service that
opens the model for every door."""
