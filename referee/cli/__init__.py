"""The ``arena`` command line: one module per command group, registered in ``main``.

Its processes set ``GRPC_VERBOSITY=ERROR`` (unless it is set) before grpc is imported:
grpc's core logs its routine events at INFO otherwise (a GOAWAY line at every referee
restart), which buried the output people read, e.g. ``arena bot check``'s report. Errors
still show.
"""

import os

os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
