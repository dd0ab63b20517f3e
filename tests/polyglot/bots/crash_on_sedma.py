"""Broken on purpose: plays Sevens correctly but crashes on every Sedma decision."""

import json
import sys

for line in sys.stdin:
    turn = json.loads(line)
    if turn["game"] == "sedma":
        print("crash_on_sedma: no idea how to play sedma", file=sys.stderr, flush=True)
        sys.exit(4)
    print(turn["legal_actions"][0], flush=True)
