"""Misbehaves now and then, for the full-match bridge test: sleeps past its budget on its
2nd decision and crashes on its 4th (counted from each start); otherwise plays the first
legal action."""

import json
import sys
import time

for count, line in enumerate(sys.stdin, start=1):
    turn = json.loads(line)
    if count == 2:
        time.sleep(turn["budget_ms"] / 1000 + 0.5)
    if count == 4:
        print("flaky: crashing on purpose", file=sys.stderr, flush=True)
        sys.exit(5)
    print(turn["legal_actions"][0], flush=True)
