"""The HTTP surface: plain request and response values, the route table, the policy every
request passes (kill switch, CORS, keys, rate limits), settings from vars, errors, the request
log, health and the local stats route."""
