"""Broken on purpose: thinks 1.5 s whenever its budget is under a second."""

import json
import sys
import time

for line in sys.stdin:
    turn = json.loads(line)
    if turn["budget_ms"] < 1000:
        time.sleep(1.5)
    print(
        json.dumps(
            {
                "action": turn["legal_actions"][0],
                "seq": turn["seq"],
                "attempt": turn["attempt"],
                "match_id": turn["match_id"],
            }
        ),
        flush=True,
    )
