"""What several doors share: OpenAI error shapes, parameters, messages and chunk events,
the page's SSE events and the Durable Objects' conversation store."""
