"""Reads one question, writes one line to stderr and exits without answering: a bot whose
code fails on every turn (the bridge answers for it, marked as a fallback)."""

import sys

sys.stdin.readline()
print("gives_up: cannot decide, exiting", file=sys.stderr, flush=True)
sys.exit(3)
