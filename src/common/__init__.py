"""What several doors share: OpenAI error shapes, parameters, messages and chunk events,
the page's SSE events, owners and the Durable Object store they read."""
