"""The continuous ladder: bots play all the time, matched by rating (docs/ladder.md)."""
