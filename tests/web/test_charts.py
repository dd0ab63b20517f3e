"""The league page's SVG charts: the Elo axis follows the estimates (the early checkpoints'
wide intervals are clipped, not scaled to), and the line-end labels never overlap."""

from __future__ import annotations

import itertools
import re

from referee.web.charts import LABEL_GAP, Series, line_chart, spread_labels, value_range


def _early_season() -> list[Series]:
    """Five bots whose first checkpoints carry the prior's wide intervals (0..3000)."""
    elos = {"a": 1540.0, "b": 1520.0, "c": 1505.0, "d": 1490.0, "e": 1450.0}
    out = []
    for name, elo in elos.items():
        points = [(1.0, 1500.0), (5.0, (1500 + elo) / 2), (10.0, elo)]
        band = [(1.0, 0.0, 3000.0), (5.0, elo - 400, elo + 400), (10.0, elo - 120, elo + 120)]
        out.append(Series(name, points, band))
    return out


def test_the_value_range_follows_the_estimates_not_the_intervals() -> None:
    low, high = value_range(_early_season())
    assert 1440 <= low < 1450 and 1540 < high <= 1550, (low, high)
    # A single value still gets a readable span; bands alone are used when there is no line.
    assert value_range([Series("x", [(1, 1500.0)])]) == (1490.0, 1510.0)
    assert value_range([Series("x", [], [(1, 10.0, 30.0)])]) == (8.4, 31.6)


def test_the_elo_chart_axis_brackets_the_estimates_and_clips_the_bands() -> None:
    svg = line_chart(_early_season(), title="Elo", x_label="matches", y_label="Elo")
    ticks = [float(t) for t in re.findall(r'class="tick">([\d.-]+)</text>', svg)[:20]]
    y_ticks = [t for t in ticks if t > 100]  # the x axis counts matches 1..10
    assert y_ticks and min(y_ticks) >= 1400 and max(y_ticks) <= 1600, y_ticks
    top, height = 14, 260 - 14 - 34  # the plot rectangle
    for polygon in re.findall(r'<polygon points="([^"]+)"', svg):
        ys = [float(p.split(",")[1]) for p in polygon.split()]
        assert all(top - 0.05 <= y <= top + height + 0.05 for y in ys), "band outside the plot"


def test_line_end_labels_keep_apart_and_stay_close_to_their_lines() -> None:
    wanted = [100.0, 101.0, 102.0, 300.0, 40.0]
    got = spread_labels(wanted, 20.0, 320.0)
    ordered = sorted(got)
    assert all(b - a >= LABEL_GAP - 1e-6 for a, b in itertools.pairwise(ordered))
    assert sorted(range(5), key=lambda i: got[i]) == sorted(range(5), key=lambda i: wanted[i])
    assert got[3] == 300.0 and got[4] == 40.0  # labels with room stay where their line ends
    assert all(20.0 <= y <= 320.0 for y in got)
    # Crowded at an edge: pushed inside the bounds, still apart.
    edge = spread_labels([318.0, 319.0, 320.0], 20.0, 320.0)
    assert max(edge) <= 320.0 and sorted(edge)[1] - sorted(edge)[0] >= LABEL_GAP - 1e-6
    svg = line_chart(_early_season(), title="Elo", x_label="matches", y_label="Elo")
    label_ys = sorted(float(y) for y in re.findall(r'y="([\d.]+)" fill="#\w+" class="label"', svg))
    assert len(label_ys) == 5
    assert all(b - a >= LABEL_GAP - 0.1 for a, b in itertools.pairwise(label_ys))


def test_the_doctests_of_the_charts_and_card_text_pass() -> None:
    import doctest

    from referee.games import cards
    from referee.web import charts, human

    for module in (charts, cards, human):
        failed, attempted = doctest.testmod(module)
        assert failed == 0 and attempted > 0, module.__name__
