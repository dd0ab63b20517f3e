"""Pure rules engines (no I/O): cards, the Sevens family, Sedma, and the game registry."""
