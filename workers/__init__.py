"""RQ workers: the match runner, clocks, mailbox client and autopilot. No gRPC here."""
