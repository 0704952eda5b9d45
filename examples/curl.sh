#!/bin/sh
# The Worker's own SSE API with curl: -N prints each event as it arrives.
#   AI_CHAT_URL=http://127.0.0.1:8787 sh examples/curl.sh "Hello!"
set -eu
base="${AI_CHAT_URL:-http://127.0.0.1:8787}"
prompt="${1:-Say hello in five words.}"
# The prompt goes through a JSON string: escape backslashes and quotes.
escaped=$(printf '%s' "$prompt" | sed 's/\\/\\\\/g; s/"/\\"/g')
curl -sS -N "${base%/}/api/v1/chat" \
  -H 'content-type: application/json' \
  -d "{\"messages\":[{\"role\":\"user\",\"content\":\"$escaped\"}],\"max_tokens\":256}"
