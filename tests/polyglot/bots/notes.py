"""Plays the first legal action and logs every notification line (``arena bridge --notify``)
to stderr, for the full-match test to read."""

import json
import sys

for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "turn":
        print(message["legal_actions"][0], flush=True)
    else:
        print(f"note {message['type']} {message.get('status', '')}", file=sys.stderr, flush=True)
