"""Hosted bots: the platform holds a bot's code, builds it and runs it in a sandbox.

* :mod:`referee.hosting.sandbox`: the sandbox primitive (bubblewrap + rlimits), shared by
  builds and play;
* :mod:`referee.hosting.errors`: this layer's exceptions.

docs/HOSTING.md describes the sandbox, the limits and the threat model.
"""
