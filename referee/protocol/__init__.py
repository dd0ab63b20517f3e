"""The wire encoding of the match contract, beside the generated ``arena.v1`` code."""
