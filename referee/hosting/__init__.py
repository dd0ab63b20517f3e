"""Hosted bots: the platform holds a bot's code, builds it and runs it sandboxed."""
