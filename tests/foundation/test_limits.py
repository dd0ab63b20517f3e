"""``referee.limits``: the settings' parser, the token bucket, the stream slots, the peer's
client and the replay cache (the surfaces that use them are tested in tests/adversarial)."""

from __future__ import annotations

import pytest

from referee.cli.main import main as arena_main
from referee.errors import ConfigError, LimitExceeded
from referee.limits import Limits, RateLimiter, RenderCache, Slots, client_of_peer


def test_settings_change_named_limits_and_refuse_anything_else() -> None:
    limits = Limits().with_settings(["reads_per_s=2.5", "sse-per-client=0", "outbox_bytes=10"])
    assert (limits.reads_per_s, limits.sse_per_client, limits.outbox_bytes) == (2.5, 0, 10)
    assert limits.watch_streams == Limits().watch_streams
    with pytest.raises(ConfigError, match="known NAME: the names are outbox_bytes, "):
        Limits().with_settings(["read_rate=3"])
    with pytest.raises(ConfigError, match="must be a whole number"):
        Limits().with_settings(["outbox_bytes=1.5"])
    with pytest.raises(ConfigError, match="must be 0 \\(off\\) or more"):
        Limits().with_settings(["page_wait_s=-1"])


def test_a_bad_limit_flag_is_one_error_line(capsys: pytest.CaptureFixture[str]) -> None:
    code = arena_main(["referee", "--redis-url", "redis://127.0.0.1:1/0", "--limit", "nope=1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and len(err) == 1, err
    assert "--limit 'nope=1' is not NAME=VALUE" in err[0] and "reads_per_s" in err[0]


def test_a_bucket_lets_a_burst_through_then_says_when_to_come_back() -> None:
    now = [0.0]
    bucket = RateLimiter(2.0, 3, clock=lambda: now[0])
    assert [bucket.take("a") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.take("a") == pytest.approx(0.5)
    assert bucket.take("b") == 0.0  # another client has its own bucket
    with pytest.raises(LimitExceeded, match="try again in 1 s") as refused:
        bucket.check("a", "League.GetReplay")
    assert refused.value.status == "RESOURCE_EXHAUSTED"
    now[0] = 0.5
    assert bucket.take("a") == 0.0
    assert RateLimiter(0, 1).take("a") == 0.0  # rate 0: off


def test_a_bucket_forgets_full_buckets_past_its_client_count() -> None:
    now = [0.0]
    bucket = RateLimiter(1.0, 2, max_clients=10, clock=lambda: now[0])
    for i in range(10):
        bucket.take(f"c{i}")
    now[0] = 100.0
    bucket.take("new")
    assert list(bucket._buckets) == ["new"]


def test_slots_cap_per_client_and_in_total_and_free_on_release() -> None:
    slots = Slots(2, 3, "event streams", ("per", "total"))
    slots.acquire("a")
    slots.acquire("a")
    with pytest.raises(LimitExceeded, match=r"a already holds 2 open event streams.*--limit per"):
        slots.acquire("a")
    slots.acquire("b")
    with pytest.raises(LimitExceeded, match="at most 3 open event streams \\(--limit total\\)"):
        slots.acquire("c")
    slots.release("a")
    slots.acquire("c")
    assert slots.count == 3 and slots.held == {"a": 1, "b": 1, "c": 1}
    unlimited = Slots(0, 0, "streams", ("x", "y"))
    for _ in range(100):
        unlimited.acquire("a")


@pytest.mark.parametrize(
    ("peer", "client"),
    [
        ("ipv4:10.0.0.5:4711", "10.0.0.5"),
        ("ipv6:[::1]:4711", "::1"),
        ("unix:/tmp/s", "unix:/tmp/s"),
        ("", "unknown"),
    ],
)
def test_the_client_of_a_peer_is_its_address_without_the_port(peer: str, client: str) -> None:
    assert client_of_peer(peer) == client


def test_the_render_cache_keeps_the_newest() -> None:
    cache = RenderCache(2)
    cache.put(("text", "m1"), "s", "one")
    cache.put(("text", "m2"), "s", "two")
    assert cache.get(("text", "m1")) == ("s", "one")  # m1 is now the newest
    cache.put(("text", "m3"), "", "three")
    assert cache.get(("text", "m2")) is None
    assert cache.get(("text", "m1")) is not None
    off = RenderCache(0)
    off.put(("text", "m1"), "", "one")
    assert off.get(("text", "m1")) is None
