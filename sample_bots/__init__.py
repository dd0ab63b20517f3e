"""Sample bots for the Python SDK (:mod:`arena_sdk`). Imports neither ``referee`` nor
``workers``. ``sample_bots.sdk`` and ``sample_bots.bridge`` are aliases of
:mod:`arena_sdk.sdk` and :mod:`arena_sdk.bridge`, kept for bots written against them."""

import arena_sdk  # noqa: F401  (sets GRPC_ENABLE_FORK_SUPPORT before grpc is imported)
