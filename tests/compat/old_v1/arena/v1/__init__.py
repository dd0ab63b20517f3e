"""A frozen copy of the arena.v1 code generated at commit 532369e (protocol v1 before
issue 15): tests/compat runs a bot built from it against the current referee."""
