"""How the referee's config reaches the relay and the co-hosted match host (unit tests of
``referee/gateway/server.py``; the real co-hosting is tests/workers/test_cohost.py)."""

from __future__ import annotations

from dataclasses import fields

import pytest

from referee.errors import ConfigError
from referee.gateway.hub import HubConfig
from referee.gateway.server import RefereeConfig, RefereeServer


def test_the_relay_takes_every_field_it_shares_with_the_referee_config() -> None:
    config = RefereeConfig(
        redis_url="redis://127.0.0.1:1",
        max_streams_per_bot=7,
        max_concurrency=9,
        junk_burst=3,
        hello_timeout_s=1.5,
        write_timeout_s=2.5,
    )
    shared = {f.name for f in fields(HubConfig)} & {f.name for f in fields(RefereeConfig)}
    given = config.hub_fields()
    assert set(given) == shared - {"referee_id"} and len(given) >= 9
    hub = HubConfig(referee_id="r", **given)
    assert (hub.max_streams_per_bot, hub.max_concurrency, hub.junk_burst) == (7, 9, 3)
    assert (hub.hello_timeout_s, hub.write_timeout_s) == (1.5, 2.5)
    defaults = RefereeConfig(redis_url="redis://127.0.0.1:1").hub_fields()
    assert HubConfig(referee_id="r", **defaults) == HubConfig(referee_id="r")


def test_co_hosted_matches_need_a_host_factory() -> None:
    """The gateway imports nothing of the workers: whoever asks for co-hosted matches
    passes the factory (``arena referee`` passes ``referee.cli.referee_cmd.cohost``)."""
    for config in (
        RefereeConfig(redis_url="redis://127.0.0.1:1", matches=2),
        RefereeConfig(redis_url="redis://127.0.0.1:1", casual_matches=1),
    ):
        with pytest.raises(ConfigError, match="need a match host factory: pass cohost="):
            RefereeServer(config)
