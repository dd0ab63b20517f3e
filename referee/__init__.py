"""Sevens Arena referee: rules engines, gRPC gateway, League API, seasons and standings."""

import os

# Our processes only ever fork to exec (subprocess), never to keep using gRPC in the child.
# gRPC's fork handlers then do harm: since grpcio 1.81 a child of a process with live
# channels can die with "epoll_wait error: Bad file descriptor" (grpc/grpc#43055, seen in
# our season tests). Turning fork support off must happen before grpc is imported.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")

__version__ = "0.1.0"
