"""The pages in a real headless Chromium, on a real platform: ``arena referee`` (serving
the web inside its event loop), an ``arena worker`` process and SDK bot processes.

Few and fast on purpose (one platform, one browser for the module): the league page
updates in place while a season runs; a replay steps through a deal showing the
engine's state at each step; a person plays a whole match by clicks against SDK bots and
nothing reaches their page that a bot in their seat would not get.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from referee import keys, queue
from referee.embedded_redis import EmbeddedRedis
from referee.match.row import parse_row
from referee.seasons import store
from referee.seasons.model import SeasonSpec
from referee.seasons.platform import Platform
from referee.web.records import read_record
from tests.web.browser import chromium, find_browser, screenshot, wait_for

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(isinstance(find_browser(), str), reason=str(find_browser())),
]

BOTS = {
    "hold-1": "det-hold-sevens",
    "rand-1": "det-random",
    "first-1": "first-legal",
    "hold-2": "det-hold-sevens",
    "rand-2": "det-random",
}
CARD = re.compile(r"\b(?:[2-9TJQKA])[CDHS]\b")

# 6 deals a match: the season plays for a few seconds, so the live feed (one read a
# second, referee/web/live.py) shows matches in flight (with 2 it could end between reads)
SEASON_TOML = """
name = "live"
game = "sevens"
preset = "fan-tan"
bots = ["hold-1", "rand-1", "first-1", "hold-2", "rand-2"]
table_size = 4
deals_per_match = 6
seed = 77

[time_control]
move_ms = 3000
bank_ms = 10000

[options]
window = 2
duplicate = false
"""


@pytest.fixture(scope="module")
def platform(
    embedded_redis: EmbeddedRedis, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Platform]:
    conn = redis.Redis.from_url(embedded_redis.url)
    conn.flushall()
    conn.close()
    with Platform(tmp_path_factory.mktemp("web-platform"), redis_url=embedded_redis.url) as p:
        p.admin_token = "web-" + p.admin_token  # argv: a token starting with '-' (argparse's trap)
        p.start_referee()
        p.register_bots(list(BOTS))
        for i, (name, kind) in enumerate(BOTS.items()):
            p.start_bot(name, kind, seed=10 + i)
        p.start_workers(processes=1, per_process=2)
        p.wait_bots_connected()
        yield p


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as driver:
        yield driver


@pytest.fixture(scope="module")
def conn(platform: Platform) -> Iterator[redis.Redis]:
    client = platform.client()
    yield client
    client.close()


def url(platform: Platform, path: str) -> str:
    return f"http://127.0.0.1:{platform.http_port}{path}"


def attr(browser: Any, element_id: str, name: str) -> str:
    value = browser.execute_script(
        "var e = document.getElementById(arguments[0]); return e && e.getAttribute(arguments[1]);",
        element_id,
        name,
    )
    return "" if value is None else str(value)


@pytest.fixture(scope="module")
def finished_season(platform: Platform, conn: redis.Redis, browser: Any) -> dict[str, str]:
    """The season 'live', run to its end while the league page is open (checked in
    test_league_page_updates_in_place_while_a_season_runs)."""
    store.create_season(conn, SeasonSpec.from_toml(SEASON_TOML))
    browser.get(url(platform, "/?season=live"))
    wait_for(
        lambda: "updated" in browser.find_element("id", "live-status").text,
        30,
        "the live feed never updated the page",
    )
    browser.execute_script("window.__samePage = 'not reloaded';")
    first_updates = int(attr(browser, "season", "data-updates") or 0)
    store.start_season(conn, "live")
    total = int(store.get_season(conn, "live")["matches_total"])
    seen: dict[str, set[str]] = {"in_flight": set(), "rates": set()}

    def settled() -> bool:
        live = browser.execute_script(
            "return [document.getElementById('inflight').innerText,"
            " document.getElementById('progress').innerText];"
        )
        seen["in_flight"].update(re.findall(r"live-m\d+", live[0]))
        seen["rates"].update(re.findall(r"([\d.]+) decisions/s", live[1]))
        return attr(browser, "season", "data-settled") == str(total)

    wait_for(settled, 180, f"the page did not show all {total} matches settled", poll=0.05)
    info = store.get_season(conn, "live")
    info["first_updates"] = str(first_updates)
    info["seen_in_flight"] = " ".join(sorted(seen["in_flight"]))
    info["seen_rates"] = " ".join(sorted(seen["rates"]))
    return info


def test_league_page_updates_in_place_while_a_season_runs(
    platform: Platform, browser: Any, finished_season: dict[str, str], conn: redis.Redis
) -> None:
    total = int(finished_season["matches_total"])
    assert browser.execute_script("return window.__samePage") == "not reloaded"
    assert int(attr(browser, "season", "data-updates")) > int(finished_season["first_updates"])
    assert finished_season["seen_in_flight"], "no running match was shown while it ran"
    assert any(float(r) > 0 for r in finished_season["seen_rates"].split()), "no decisions/s"
    progress = browser.find_element("id", "progress").text
    assert f"{total}/{total} matches settled" in progress, progress
    wait_for(
        lambda: (
            "finished" in (t := browser.find_element("id", "seasons").text)
            and f"{total}/{total}" in t
        ),
        10,
        "the seasons table disagrees with the season's progress",
    )
    wait_for(
        lambda: (
            "hold-1" in browser.find_element("id", "standings").text
            and "No committed results" not in browser.find_element("id", "standings").text
        ),
        30,
        "the standings were not filled in place",
    )
    rows = browser.find_elements("css selector", "#standings tbody tr")
    assert len(rows) == len(BOTS)
    recent = browser.find_elements("css selector", "#recent tbody tr")
    assert recent and all("live-" in r.text for r in recent), [r.text for r in recent]
    charts = browser.find_elements("css selector", "#charts svg polyline")
    assert len(charts) >= len(BOTS), "Elo and score lines for every bot"
    assert browser.find_elements("css selector", "#charts svg polygon"), "the Elo interval band"
    _elo_chart_follows_the_ratings(browser, platform)
    browser.set_window_size(1280, 1900)
    screenshot(browser, "league")
    # A 420-px phone: no horizontal scrolling.
    browser.set_window_size(420, 900)
    try:
        browser.get(url(platform, "/?season=live"))
        wide = browser.execute_script(
            "return [document.documentElement.scrollWidth, window.innerWidth];"
        )
        assert wide[0] <= wide[1], f"the page is {wide[0]} px wide in a {wide[1]} px window"
    finally:
        browser.set_window_size(1280, 1000)


READ_ELO_CHART = """
    var svg = document.querySelector('#charts svg.chart');
    var plot = svg.querySelector('rect').getBBox();
    function box(e) { var b = e.getBBox(); return [b.x, b.y, b.width, b.height]; }
    return {
      ticks: Array.prototype.map.call(svg.querySelectorAll('text.tick[text-anchor="end"]'),
        function (t) { return parseFloat(t.textContent); }),
      plot: [plot.y, plot.height],
      range: [parseFloat(svg.getAttribute('data-y-min')),
              parseFloat(svg.getAttribute('data-y-max'))],
      lines: Array.prototype.map.call(svg.querySelectorAll('polyline'), function (l) {
        return l.getAttribute('points').split(' ').map(function (p) {
          return parseFloat(p.split(',')[1]); }); }),
      labels: Array.prototype.map.call(svg.querySelectorAll('text.label'), box),
      names: Array.prototype.map.call(svg.querySelectorAll('text.label'),
        function (t) { return t.textContent; })
    };
"""


def _elo_chart_follows_the_ratings(browser: Any, platform: Platform) -> None:
    """The Elo chart's axis brackets the bots' estimates tightly (not the early checkpoints'
    0..3000 intervals), the lines use the plot's height, and no two end labels overlap."""
    import redis.asyncio as aredis

    from referee.web import history, league

    async def checkpoints() -> list[dict[str, Any]]:
        client = aredis.Redis.from_url(platform.redis_url)
        try:
            return await league.season_checkpoints(client, "live")
        finally:
            await client.aclose()

    elo, _score = history.from_checkpoints(list(BOTS), asyncio.run(checkpoints()))
    estimates = [y for s in elo for _x, y in s.points]
    spread = max(estimates) - min(estimates)

    def read_chart() -> dict[str, Any] | None:
        chart: dict[str, Any] = browser.execute_script(READ_ELO_CHART)
        return chart if len(chart["names"]) == len(BOTS) else None

    chart = wait_for(read_chart, 30, "the Elo chart has no label per bot")
    assert chart is not None
    ticks = chart["ticks"]
    slack = 0.15 * spread + 10
    assert len(ticks) >= 2, ticks
    assert min(estimates) - slack <= min(ticks) and max(ticks) <= max(estimates) + slack, (
        f"the axis ticks {ticks} for estimates {min(estimates):.0f}..{max(estimates):.0f}"
    )
    low, high = chart["range"]
    assert low <= min(estimates) and max(estimates) <= high, (chart["range"], spread)
    assert high - low <= 1.25 * spread + 20, (
        f"the axis runs {low:g}..{high:g} for estimates {min(estimates):.0f}..{max(estimates):.0f}"
    )
    assert all(low <= t <= high for t in ticks), (ticks, chart["range"])
    top, height = chart["plot"]
    ys = [y for line in chart["lines"] for y in line]
    assert all(top - 0.5 <= y <= top + height + 0.5 for y in ys)
    assert max(ys) - min(ys) >= 0.75 * height, (
        f"the lines use {max(ys) - min(ys):.0f} of {height:.0f} px"
    )
    boxes = chart["labels"]
    for i, (x1, y1, w1, h1) in enumerate(boxes):
        for x2, y2, w2, h2 in boxes[i + 1 :]:
            apart = x1 + w1 <= x2 or x2 + w2 <= x1 or y1 + h1 <= y2 + 0.5 or y2 + h2 <= y1 + 0.5
            assert apart, f"labels overlap: {chart['names']} {boxes}"


def _expected_frames(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The engine's state after each step of the record's first deal (table and hands)."""
    view = read_record(record)
    n = len(view.seats)

    def state(match: Any) -> dict[str, Any]:
        obs = [match.observation(s) for s in range(n)]
        return {
            "table": {suit: " ".join(cards) for suit, cards in obs[0]["table"].items()},
            "hands": [" ".join(o["hand"]) for o in obs],
            "deal": obs[0]["deal_index"],
        }

    frames = [state(view.new_match())]
    for match, _step, _events in view.applied():
        frames.append(state(match))
        if frames[-1]["deal"] != 0:
            break
    return frames


def test_a_replay_steps_through_a_deal_showing_the_engine_state(
    platform: Platform, browser: Any, finished_season: dict[str, str], conn: redis.Redis
) -> None:
    match_id = sorted(store.match_states(conn, "live"))[0]
    raw = queue.get_record(conn, match_id)
    assert raw is not None
    expected = _expected_frames(raw)
    browser.get(url(platform, f"/replay/{match_id}?step=0&view=full"))
    wait_for(lambda: attr(browser, "replay", "data-ready") == "true", 30, "replay not loaded")
    read_board = """
        var rows = {}, hands = [];
        document.querySelectorAll('#board .table-view .row').forEach(function (r) {
          rows[r.getAttribute('data-suit')] = r.getAttribute('data-cards'); });
        document.querySelectorAll('#board .seat .hand').forEach(function (h) {
          hands.push(h.getAttribute('data-cards')); });
        return {step: document.getElementById('board').getAttribute('data-step'),
                table: rows, hands: hands};
    """
    for k, want in enumerate(expected):
        if k:
            browser.find_element("id", "next").click()

        def at_step(k: int = k) -> dict[str, Any] | None:
            board: dict[str, Any] = browser.execute_script(read_board)
            return board if board["step"] == str(k) else None

        got = wait_for(
            at_step,
            10,
            f"the replay did not reach step {k}",
            poll=0.02,
        )
        assert got is not None
        assert got["table"] == want["table"], f"step {k}: table"
        assert got["hands"] == want["hands"], f"step {k}: hands (full view: face up)"
        if k == len(expected) // 2:
            screenshot(browser, "replay")
    # Each seat's view: only that seat's hand face up, the others as counts.
    Select = pytest.importorskip("selenium.webdriver.support.select").Select
    Select(browser.find_element("id", "view")).select_by_value("seat1")
    hidden = browser.find_elements("css selector", "#board .seat .hand[data-hidden]")
    assert len(hidden) == 3
    shown = browser.find_elements("css selector", "#board .seat .hand[data-cards]")
    assert [h.get_attribute("data-cards") for h in shown] == [expected[-1]["hands"][1]]
    assert "step=" in browser.current_url and "view=seat1" in browser.current_url  # permalink
    permalink = browser.current_url
    browser.set_window_size(420, 900)
    try:
        browser.get(permalink)  # the permalink opens the same move and view, at phone width
        wait_for(lambda: attr(browser, "board", "data-view") == "seat1", 30, "permalink view")
        assert attr(browser, "board", "data-step") == str(len(expected) - 1)
        wide = browser.execute_script(
            "return [document.documentElement.scrollWidth, window.innerWidth];"
        )
        assert wide[0] <= wide[1], f"the replay is {wide[0]} px wide in a {wide[1]} px window"
    finally:
        browser.set_window_size(1280, 1000)
    _the_log_follows_the_step_with_card_symbols(browser, platform, match_id)
    # Cards are text for screen readers, suits have symbols.
    label = browser.find_element(
        "css selector", "#board .seat .hand .card[data-card]"
    ).get_attribute("aria-label")
    assert re.fullmatch(r"(ace|king|queen|jack|10|[2-9]) of (clubs|diamonds|hearts|spades)", label)


READ_LOG = """
    var log = document.getElementById('log'), now = log.querySelector('.now');
    var box = log.getBoundingClientRect(), at = now.getBoundingClientRect();
    return {step: document.getElementById('board').getAttribute('data-step'),
            now: now.textContent, text: log.innerText,
            visible: at.top >= box.top - 1 && at.bottom <= box.bottom + 1};
"""


def _the_log_follows_the_step_with_card_symbols(
    browser: Any, platform: Platform, match_id: str
) -> None:
    """At step 27 (by permalink, then a step forward) the log's visible line is that step,
    and it names cards as the table draws them (``2♣``, never ``2C``)."""
    browser.get(url(platform, f"/replay/{match_id}?step=27&view=full"))
    wait_for(lambda: attr(browser, "replay", "data-ready") == "true", 30, "replay not loaded")
    for k in (27, 28):
        if k == 28:
            browser.find_element("id", "next").click()

        def at_step(k: int = k) -> dict[str, Any] | None:
            log: dict[str, Any] = browser.execute_script(READ_LOG)
            return log if log["step"] == str(k) else None

        got = wait_for(at_step, 10, f"the replay did not show step {k}")
        assert got is not None
        assert got["now"].startswith(f"{k}. "), got["now"]
        assert got["visible"], f"step {k}'s log line is scrolled out of the log's box"
        assert not CARD.findall(got["text"]), f"card codes in the log: {got['text']!r}"
        assert re.search(r"plays (?:10|[2-9AJQK])[♣♦♥♠]", got["text"]), got["text"]


def test_a_person_plays_a_whole_match_by_clicks_and_sees_only_their_seat(
    platform: Platform, browser: Any, finished_season: dict[str, str], conn: redis.Redis
) -> None:
    browser.get(url(platform, "/play"))
    browser.find_element("name", "name").clear()
    browser.find_element("name", "name").send_keys("alice")
    Select = pytest.importorskip("selenium.webdriver.support.select").Select
    Select(browser.find_element("name", "variant")).select_by_value("sevens/fan-tan")
    for bot in ("hold-1", "rand-1", "first-1"):
        browser.find_element("css selector", f'input[name="bot"][value="{bot}"]').click()
    browser.find_element("name", "deals").send_keys("1")
    browser.find_element("id", "start").click()
    wait_for(lambda: "/play/" in browser.current_url, 30, "the game did not start")
    match_id = attr(browser, "play", "data-match")
    assert match_id.startswith("casual-")
    rng = random.Random(5)
    answered = 0
    last_seq = ""
    deadline = time.monotonic() + 180
    while attr(browser, "play", "data-over") != "true":
        assert time.monotonic() < deadline, "the match did not end"
        seq = attr(browser, "play", "data-seq")
        if attr(browser, "play", "data-waiting") != "true" or seq == last_seq:
            time.sleep(0.05)
            continue
        buttons = browser.find_elements("css selector", "button.legal:not([disabled])")
        assert buttons, "a turn with no legal action offered"
        if answered == 3:
            screenshot(browser, "play")
        rng.choice(buttons).click()
        last_seq = seq
        answered += 1
    assert answered > 0
    result = wait_for(lambda: conn.get(keys.match_result(match_id)), 30, "no committed result")
    assert parse_row(str(result))["result"]["totals"]
    record = queue.get_record(conn, match_id) or {}
    view = read_record(record)
    assert view.seats[0] == "human-alice" and not view.season  # casual: no season
    mine = [s for s in view.steps if s.get("seat") == 0 and s.get("source") == "bot"]
    assert len(mine) == answered, "every turn of the person's seat was answered by a click"
    assert all(s["status"] == "accepted" and not s["timeout"] for s in mine), [
        (s["status"], s.get("reason")) for s in mine if s["status"] != "accepted"
    ]
    assert not store.get_season(conn, "live").get("casual"), "the season did not count it"
    _nothing_hidden_reached_the_page(browser, record)


READ_SEDMA_PLAY = """
    var trick = document.querySelector('#board .row.trick');
    return {seq: document.getElementById('play').getAttribute('data-seq'),
            whoami: document.getElementById('whoami').textContent,
            facts: document.querySelector('#board .sedma-facts').textContent,
            played: Array.prototype.map.call(trick.querySelectorAll('.played'), function (p) {
              return [p.querySelector('[data-card]').getAttribute('data-card'),
                      p.querySelector('.by').textContent]; }),
            status: document.getElementById('status').textContent};
"""


def test_a_sedma_player_sees_their_partner_who_played_each_card_and_who_took_tricks(
    platform: Platform, browser: Any, finished_season: dict[str, str], conn: redis.Redis
) -> None:
    """Item 9 (web): the page names the person's partner, gives tricks and points per side
    (the person's side first, by name), shows under each trick card who played it, and
    tells who took each trick; all checked against the match record."""
    browser.get(url(platform, "/play"))
    browser.find_element("name", "name").clear()
    browser.find_element("name", "name").send_keys("sara")
    Select = pytest.importorskip("selenium.webdriver.support.select").Select
    Select(browser.find_element("name", "variant")).select_by_value("sedma/sedma")
    for bot in ("rand-1", "first-1", "rand-2"):
        browser.find_element("css selector", f'input[name="bot"][value="{bot}"]').click()
    browser.find_element("name", "deals").send_keys("1")
    browser.find_element("id", "start").click()
    wait_for(lambda: "/play/" in browser.current_url, 30, "the game did not start")
    match_id = attr(browser, "play", "data-match")
    seen: list[dict[str, Any]] = []
    last_seq = ""
    deadline = time.monotonic() + 180
    while attr(browser, "play", "data-over") != "true":
        assert time.monotonic() < deadline, "the match did not end"
        seq = attr(browser, "play", "data-seq")
        if attr(browser, "play", "data-waiting") != "true" or seq == last_seq:
            time.sleep(0.05)
            continue
        seen.append(browser.execute_script(READ_SEDMA_PLAY))
        if len(seen) == 3:
            screenshot(browser, "play-sedma")
        buttons = browser.find_elements("css selector", "button.legal:not([disabled])")
        buttons[0].click()
        last_seq = seq
    raw = wait_for(lambda: queue.get_record(conn, match_id), 30, "no record")
    assert raw is not None
    view = read_record(raw)
    # Opponents sit in the form's order (its checkboxes: by name): the partner is seat 2.
    seats = list(view.seats)
    assert seats == ["human-sara", "first-1", "rand-1", "rand-2"]
    names = ["you", "first-1", "rand-1 (your partner)", "rand-2"]
    assert all("your partner: rand-1 (seat 2)" in s["whoami"] for s in seen)
    assert all(
        re.search(r"tricks won: you and rand-1 \d+, first-1 and rand-2 \d+", s["facts"])
        and re.search(r"card points: you and rand-1 \d+, first-1 and rand-2 \d+", s["facts"])
        for s in seen
    ), [s["facts"] for s in seen]
    # The trick on the table at each turn, and who took each trick: from the record.
    requests = {int(st["seq"]): st for st in view.steps if st.get("seat") == 0 and "seq" in st}
    takers: list[str] = []
    told: list[str] = []
    for s in seen:
        trick = requests[int(s["seq"])]["request"]["observation"]["trick"]
        want = [[t["card"], "you" if t["seat"] == 0 else view.seats[t["seat"]]] for t in trick]
        assert s["played"] == want, (s["seq"], s["played"], want)
        told += re.findall(r"([\w-]+(?: \(your partner\))?) took the trick", s["status"])
    for _m, _step, events in view.applied():
        takers += [names[e.seat] for e in events if e.kind == "trick" and e.seat is not None]
    assert len(told) >= 7 and told == takers[: len(told)], (told, takers)
    log = browser.find_element("id", "log").text
    assert re.search(r"deal 1 over: won by (you and rand-1|first-1 and rand-2); changes you ", log)


def _nothing_hidden_reached_the_page(browser: Any, record: dict[str, Any]) -> None:
    """Like the gateway's LeakChecker: no card another seat held at the time of a turn
    appears in anything the page received up to that turn; each turn's observation is
    the one the worker sent the seat (the record keeps it)."""
    received = browser.execute_script("return window.__seatEvents;")
    view = read_record(record)
    requests = {int(s["seq"]): s for s in view.steps if s.get("seat") == 0 and "seq" in s}
    others_at: dict[int, set[str]] = {}
    match = view.new_match()
    for step in view.steps:
        if step.get("seat") == 0 and "seq" in step:
            others_at[int(step["seq"])] = {
                c for s in range(1, len(view.seats)) for c in match.observation(s)["hand"]
            }
        if step.get("takeover"):
            continue
        if step.get("source") == "bot":
            if step.get("timeout"):
                match.apply_timeout()
            else:
                match.apply(str(step["answer"]))
        else:
            match.apply(str(step["action"]), str(step["source"]))
    seen_text = ""
    turns = 0
    for event in received:
        seen_text += json.dumps(event)
        if event["kind"] != "turn":
            continue
        payload = event["payload"]
        seq = int(payload["seq"])
        assert set(payload) == {
            "match_id", "attempt", "seq", "seat", "game", "season", "observation",
            "legal_actions", "clock",
        }  # fmt: skip
        sent = requests[seq]["request"]
        assert payload["observation"]["hand"] == sent["observation"]["hand"]
        assert payload["observation"]["table"] == sent["observation"]["table"]
        assert payload["legal_actions"] == sent["legal_actions"]
        leaked = set(CARD.findall(seen_text)) & others_at[seq]
        assert not leaked, f"turn {seq}: other seats' cards reached the page: {sorted(leaked)}"
        page_cards = set(CARD.findall(browser.page_source)) if seq == max(requests) else set()
        assert not (page_cards & others_at[seq])
        turns += 1
    assert turns == len(requests)


def test_bot_page_shows_its_seasons_matches_and_think_times(
    platform: Platform, finished_season: dict[str, str]
) -> None:
    import urllib.request

    with urllib.request.urlopen(url(platform, "/bot/rand-1"), timeout=30) as reply:
        page = reply.read().decode()
    assert 'href="/?season=live"' in page and 'href="/replay/live-m' in page
    decisions = int(re.search(r"(\d+) decisions in their records", page).group(1))  # type: ignore[union-attr]
    assert decisions > 0
    bars = re.findall(r"<title>([^<]+): (\d+)</title></rect>", page)
    assert sum(int(n) for _label, n in bars) == decisions, bars


SEDMA_TOML = """
name = "sedma-replay"
game = "sedma"
preset = "sedma"
bots = ["rand-1", "first-1"]
table_size = 4
deals_per_match = 1
seed = 5

[time_control]
move_ms = 3000
bank_ms = 10000

[options]
duplicate = false
"""

READ_SEDMA_BOARD = """
    var hands = [], hidden = [];
    document.querySelectorAll('#board .seat').forEach(function (s) {
      var h = s.querySelector('.hand');
      hands.push(h.getAttribute('data-cards'));
      hidden.push(h.getAttribute('data-hidden'));
    });
    var box = document.querySelector('#board .table-view');
    var log = document.querySelector('#log .now');
    return {step: document.getElementById('board').getAttribute('data-step'),
            view: document.getElementById('board').getAttribute('data-view'),
            game: box.getAttribute('data-game'),
            trick: document.querySelector('#board .row.trick').getAttribute('data-cards'),
            facts: document.querySelector('#board .sedma-facts').textContent,
            hands: hands, hidden: hidden, now: log ? log.textContent : '',
            shown: Array.prototype.map.call(
              document.querySelectorAll('#board [data-card]'),
              function (c) { return c.getAttribute('data-card'); })};
"""


def _sedma_states(record: dict[str, Any]) -> list[dict[str, Any]]:
    """What the engine says at each step of the record's first hand: every seat's
    observation (hand, trick, talon, tricks and points), and whether a trick ended."""
    view = read_record(record)
    n = len(view.seats)

    def state(match: Any, tricks: int) -> dict[str, Any]:
        obs = [match.observation(s) for s in range(n)]
        return {"obs": obs, "deal": obs[0]["deal_index"], "trick_ended": tricks}

    states = [state(view.new_match(), 0)]
    for match, _step, events in view.applied():
        ended = sum(1 for e in events if e.kind == "trick")
        states.append(state(match, ended))
        if states[-1]["deal"] != 0 or match.is_over():
            break
    return states


def test_a_sedma_replay_steps_through_tricks_showing_the_record(
    platform: Platform, browser: Any, finished_season: dict[str, str], conn: redis.Redis
) -> None:
    """SD-1 (partners opposite: head to head, one bot holds seats 0 and 2), SD-9 (a trick
    goes to its winner): a recorded Sedma match, stepped in the browser; at every step the
    trick, talon, tricks won, card points and every hand on screen equal the engine's
    state re-simulated from the record; a seat's view shows that seat's cards only."""
    store.create_season(conn, SeasonSpec.from_toml(SEDMA_TOML))
    store.start_season(conn, "sedma-replay")
    wait_for(
        lambda: store.get_season(conn, "sedma-replay")["state"] == store.FINISHED,
        120,
        "the Sedma season did not finish",
    )
    (match_id,) = store.match_states(conn, "sedma-replay")
    record = queue.get_record(conn, match_id) or {}
    seats = record["spec"]["seats"]
    assert seats[:2] == seats[2:] and set(seats) == {"rand-1", "first-1"}  # SD-1
    states = _sedma_states(record)
    assert sum(s["trick_ended"] for s in states) >= 2, "the hand has tricks to step through"

    def read(k: int, view: str) -> dict[str, Any]:
        def at() -> dict[str, Any] | None:
            board: dict[str, Any] = browser.execute_script(READ_SEDMA_BOARD)
            return board if board["step"] == str(k) and board["view"] == view else None

        got = wait_for(at, 10, f"the replay did not show step {k} ({view})", poll=0.02)
        assert got is not None
        return got

    browser.get(url(platform, f"/replay/{match_id}?step=0&view=full"))
    wait_for(lambda: attr(browser, "replay", "data-ready") == "true", 30, "replay not loaded")
    tricks_seen = 0
    for k, want in enumerate(states):
        if k:
            browser.find_element("id", "next").click()
        got = read(k, "full")
        obs = want["obs"][0]
        assert got["game"] == "sedma"
        assert got["trick"] == " ".join(t["card"] for t in obs["trick"]), f"step {k}: trick"
        facts = got["facts"]
        assert f"talon: {obs['talon_size']} cards" in facts, (k, facts)
        # Per side, by name (one bot holds both seats of its side: named once).
        sides = [" and ".join(dict.fromkeys(seats[s] for s in side)) for side in obs["sides"]]

        def per_side(values: list[int], sides: list[str] = sides) -> str:
            return ", ".join(f"{side} {v}" for side, v in zip(sides, values, strict=True))

        assert "tricks won: " + per_side(obs["tricks_won"]) in facts, (k, facts)
        assert "card points: " + per_side(obs["card_points"]) in facts, (k, facts)
        assert got["hands"] == [" ".join(o["hand"]) for o in want["obs"]], f"step {k}: hands"
        if want["trick_ended"]:
            assert "trick to " in got["now"], (k, got["now"])  # the log says who took it
            tricks_seen += 1
    assert tricks_seen >= 2
    screenshot(browser, "replay-sedma")
    # Each seat's view, at a step in mid-trick: that seat's hand face up, the others face
    # down as counts, and no card of another seat's hand anywhere on the board.
    mid = next(k for k, s in enumerate(states) if s["obs"][0]["trick"] and k > 4)
    Select = pytest.importorskip("selenium.webdriver.support.select").Select
    browser.get(url(platform, f"/replay/{match_id}?step={mid}&view=full"))
    wait_for(lambda: attr(browser, "replay", "data-ready") == "true", 30, "replay not loaded")
    for seat in range(4):
        Select(browser.find_element("id", "view")).select_by_value(f"seat{seat}")
        got = read(mid, f"seat{seat}")
        obs = states[mid]["obs"][seat]
        assert got["hands"][seat] == " ".join(obs["hand"])
        assert [h for s, h in enumerate(got["hands"]) if s != seat] == [None] * 3
        assert got["hidden"] == [
            None if s == seat else str(obs["hand_sizes"][s]) for s in range(4)
        ], got["hidden"]
        others = {c for s in range(4) if s != seat for c in states[mid]["obs"][s]["hand"]}
        assert not set(got["shown"]) & others, f"seat {seat}'s view shows others' cards"
        assert set(got["shown"]) == set(obs["hand"]) | {t["card"] for t in obs["trick"]}
