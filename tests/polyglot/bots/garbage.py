"""Broken on purpose: answers with half a JSON object."""

import sys

for _line in sys.stdin:
    print('{"action": ', flush=True)
