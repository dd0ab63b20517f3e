"""The match contract, pure like the rules engines it builds on (docs/ARCHITECTURE.md):
what a match is (spec), its clock, what a host tells a bot, and its replay."""
