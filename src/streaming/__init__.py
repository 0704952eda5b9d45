"""The relay, the one streaming path of every door: upstream parts in, an encoder's events out,
with pings, the idle limit, stop strings and the SSE wire format."""
