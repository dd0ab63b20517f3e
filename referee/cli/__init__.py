"""The ``arena`` command line: one module per command group, registered in ``main``."""
