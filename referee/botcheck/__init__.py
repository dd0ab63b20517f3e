"""``arena bot check``: a conformance checker for bots, in any language.

It runs a bot through scripted scenarios on a scratch referee. The scenarios send
:class:`referee.match.messages.TurnMessage` requests with observations built from real engine
states to the bot through its referee's internal stream and read the answers, as a match
host would; no worker or season is involved.

Modules, one concept each:

* ``report``: one scenario's outcome and the printed report;
* ``probe``: send a request to a bot through its referee, wait for its answer;
* ``states``: crafted decisions from real engine states (a forced pass, a run, ...);
* ``scenarios``: the checks themselves, in the order they run;
* ``harness``: the scratch platform for ``arena bot check -- COMMAND`` (embedded Redis, a
  referee process, the bridge or the bot process), which also restarts the referee for the
  reconnect scenario;
* ``measure``: ``python -m referee.botcheck.measure -- COMMAND``, the referee-stamped think
  time of a bot on the same scratch platform.
"""

from referee.botcheck.report import CheckResult, Report

__all__ = ["CheckResult", "Report"]
