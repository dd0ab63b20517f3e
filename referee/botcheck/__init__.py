"""``arena bot check``: a conformance checker for bots, in any language.

It runs a bot through scripted scenarios on a scratch referee. The scenarios push
:class:`referee.mailbox.TurnMessage` requests with observations built from real engine
states straight into the bot's inbox and read the answers from the reply lists, as a
worker would; no worker or season is involved.

Modules, one concept each:

* ``report``: one scenario's outcome and the printed report;
* ``probe``: push a request into a bot's inbox, wait for its answer (the mailbox contract);
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
