"""The Python bot SDK and sample bots. Imports neither ``referee`` nor ``workers``."""
