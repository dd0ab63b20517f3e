"""The Python bot SDK and sample bots. Imports neither ``referee`` nor ``workers``."""

import os

# The stdio bridge forks to exec the bot program while its gRPC channel is live; gRPC's
# fork handlers can then kill the child (grpc/grpc#43055). Off before grpc is imported.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
