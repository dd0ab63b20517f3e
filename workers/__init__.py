"""Match hosts: RQ jobs run many at a time per process, the match runner, the internal
stream to the referees (``link``), clocks, autopilot, replays."""
