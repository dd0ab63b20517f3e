"""Misbehaves now and then, for the full-match bridge test: crashes on its 3rd decision
(of each run) and sleeps past the clock on its 6th; otherwise plays the first legal action."""

import json
import sys
import time

for count, line in enumerate(sys.stdin, start=1):
    turn = json.loads(line)
    if count == 3:
        print("flaky: crashing on purpose", file=sys.stderr, flush=True)
        sys.exit(5)
    if count == 6:
        time.sleep(turn["budget_ms"] / 1000 + 0.5)
    print(turn["legal_actions"][0], flush=True)
