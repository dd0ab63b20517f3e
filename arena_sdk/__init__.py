"""The Python bot SDK: the client side of the bot protocol (docs/PROTOCOL.md).

* :mod:`arena_sdk.sdk`: subclass :class:`~arena_sdk.sdk.Bot`, implement ``choose``, call
  :func:`~arena_sdk.sdk.main`;
* :mod:`arena_sdk.bridge`: the stdio bridge (``arena bridge``, docs/STDIO.md).

The one package that both bot authors and the platform import: a bot imports it, and so do
the referee's own clients of the protocol (the web's human seat, ``arena play``, ``arena
bridge``, the ladder's reference bots). It imports neither ``referee``, ``workers`` nor
``sample_bots``: only the generated ``arena.v1`` code, grpcio and protobuf, so a bot needs
nothing of the platform's dependencies (Redis, RQ, aiohttp; ``tests/test_layering.py``).
``sample_bots`` holds the sample bots and keeps ``sample_bots.sdk`` / ``sample_bots.bridge``
as aliases of these modules for bots written against them. docs/bots.md has the reasoning.
"""

import os

# The stdio bridge forks to exec the bot program while its gRPC channel is live; gRPC's
# fork handlers can then kill the child (grpc/grpc#43055). Off before grpc is imported.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
