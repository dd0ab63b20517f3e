"""Charts drawn on the server as SVG (no script, no external asset: works offline).

Colour is never the only signal: every line has its own dash pattern and is labelled by
name at its end, and every chart has a ``<title>``/``<desc>`` and a table fallback in the
page for screen readers.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

PALETTE = ("#1b6ca8", "#c2452d", "#2e8b57", "#8a5cc2", "#b8860b", "#333333", "#d0589a")
DASHES = ("", "6 3", "2 3", "8 3 2 3", "1 2", "10 4", "4 4 1 4")


@dataclass(frozen=True, slots=True)
class Series:
    name: str
    points: Sequence[tuple[float, float]]
    band: Sequence[tuple[float, float, float]] = ()
    """(x, low, high): the interval drawn as a shaded band behind the line."""


def _esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def _ticks(low: float, high: float, count: int = 5, *, whole: bool = False) -> list[float]:
    if high <= low:
        return [low]
    raw = (high - low) / count
    if whole:
        raw = max(1.0, float(round(raw)))
    magnitude = 10 ** len(str(int(raw))) / 10 if raw >= 1 else 1.0
    step = max(magnitude * round(raw / magnitude), 1e-9) if raw >= 1 else raw
    first = (low // step) * step
    out: list[float] = []
    value = first
    while value <= high + 1e-9 and len(out) < 20:
        if value >= low - 1e-9:
            out.append(value)
        value += step
    return out


LABEL_GAP = 15.0
"""Vertical distance, in SVG units, between two line-end labels (12 px text, 14 high)."""
MIN_SPAN = 20.0
"""The smallest value range an axis shows (a single value would otherwise fill it)."""


def value_range(series: Sequence[Series], *, margin: float = 0.08) -> tuple[float, float]:
    """The y range a chart of ``series`` shows: the lines' own values, padded by ``margin``
    of their spread on each side (at least :data:`MIN_SPAN` wide).

    Interval bands do not widen it: a season's first checkpoints have intervals hundreds of
    points wide (the prior's ± 932 Elo), which would squash every line into one flat band.
    The bands are clipped to this range instead. With no line, the bands' values are used.

    >>> value_range([Series("a", [(1, 1480.0), (2, 1520.0)], [(1, 0.0, 3000.0)])])
    (1476.8, 1523.2)
    """
    values = [y for s in series for _x, y in s.points]
    if not values:
        values = [v for s in series for b in s.band for v in b[1:]]
    if not values:
        return 0.0, 1.0
    low, high = min(values), max(values)
    pad = (high - low) * margin
    low, high = low - pad, high + pad
    if high - low < MIN_SPAN:
        middle = (low + high) / 2
        low, high = middle - MIN_SPAN / 2, middle + MIN_SPAN / 2
    return round(low, 6), round(high, 6)


def spread_labels(wanted: Sequence[float], top: float, bottom: float) -> list[float]:
    """Label positions (SVG y, growing downwards) as close to ``wanted`` as they can be while
    :data:`LABEL_GAP` apart, kept within ``top``..``bottom`` when they fit; same order.

    >>> spread_labels([100.0, 101.0, 102.0], 0.0, 300.0)
    [86.0, 101.0, 116.0]
    """
    if not wanted:
        return []
    order = sorted(range(len(wanted)), key=lambda i: (wanted[i], i))
    gap = LABEL_GAP
    if len(wanted) > 1:
        gap = min(gap, max(bottom - top, 0.0) / (len(wanted) - 1))
    # Greedy clusters: a label too close to the cluster above joins it; a cluster sits
    # centred on the mean of its labels' wishes, then inside the bounds.
    clusters: list[list[int]] = []
    for i in order:
        clusters.append([i])
        while len(clusters) > 1:
            above, below = clusters[-2], clusters[-1]
            if _cluster_top(above, wanted, gap) + len(above) * gap <= _cluster_top(
                below, wanted, gap
            ):
                break
            clusters[-2:] = [above + below]
    placed: dict[int, float] = {}
    for cluster in clusters:
        start = _cluster_top(cluster, wanted, gap)
        for k, i in enumerate(cluster):
            placed[i] = start + k * gap
    ys = [placed[i] for i in order]
    overflow = ys[-1] - bottom
    if overflow > 0:
        ys = [y - overflow for y in ys]
        for k in range(len(ys) - 2, -1, -1):
            ys[k] = min(ys[k], ys[k + 1] - gap)
    underflow = top - ys[0]
    if underflow > 0:
        ys[0] = top
        for k in range(1, len(ys)):
            ys[k] = max(ys[k], ys[k - 1] + gap)
    out = [0.0] * len(wanted)
    for i, y in zip(order, ys, strict=True):
        out[i] = round(y, 6)
    return out


def _cluster_top(cluster: Sequence[int], wanted: Sequence[float], gap: float) -> float:
    mean = sum(wanted[i] for i in cluster) / len(cluster)
    return mean - (len(cluster) - 1) * gap / 2


def line_chart(
    series: Sequence[Series],
    *,
    title: str,
    x_label: str,
    y_label: str,
    width: int = 640,
    height: int = 260,
) -> str:
    """An SVG line chart (scales to its container's width)."""
    pad_l, pad_r, pad_t, pad_b = 52, 110, 14, 34
    xs = [p[0] for s in series for p in s.points] + [b[0] for s in series for b in s.band]
    ys = [p[1] for s in series for p in s.points]
    ys += [v for s in series for b in s.band for v in b[1:]]
    if not xs or not ys:
        return (
            f'<svg class="chart" role="img" viewBox="0 0 {width} 40" aria-label="{_esc(title)}">'
            f'<text x="4" y="24">{_esc(title)}: no data yet</text></svg>'
        )
    x0, x1 = min(xs), max(xs)
    if x1 == x0:
        x1 = x0 + 1
    y0, y1 = value_range(series)
    plot_w, plot_h = width - pad_l - pad_r, height - pad_t - pad_b

    def sx(x: float) -> float:
        return pad_l + (x - x0) / (x1 - x0) * plot_w

    def sy(y: float) -> float:
        return pad_t + (1 - (y - y0) / (y1 - y0)) * plot_h

    def clip(y: float) -> float:
        return min(max(y, y0), y1)

    out = [
        f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" '
        f'preserveAspectRatio="xMinYMin meet" aria-label="{_esc(title)}" '
        f'data-y-min="{y0:g}" data-y-max="{y1:g}">',
        f"<title>{_esc(title)}</title>",
        f'<rect x="{pad_l}" y="{pad_t}" width="{plot_w}" height="{plot_h}" fill="#fff" '
        'stroke="#ccc"/>',
    ]
    for tick in _ticks(y0, y1):
        y = sy(tick)
        out.append(
            f'<line x1="{pad_l}" x2="{pad_l + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>'
            f'<text x="{pad_l - 4}" y="{y + 4:.1f}" text-anchor="end" class="tick">'
            f"{tick:g}</text>"
        )
    whole_x = all(float(x).is_integer() for x in xs)
    for tick in _ticks(x0, x1, whole=whole_x):
        x = sx(tick)
        out.append(
            f'<text x="{x:.1f}" y="{pad_t + plot_h + 14}" text-anchor="middle" class="tick">'
            f"{tick:g}</text>"
        )
    out.append(
        f'<text x="{pad_l + plot_w / 2:.0f}" y="{height - 4}" text-anchor="middle" '
        f'class="axis">{_esc(x_label)}</text>'
        f'<text x="12" y="{pad_t + plot_h / 2:.0f}" text-anchor="middle" class="axis" '
        f'transform="rotate(-90 12 {pad_t + plot_h / 2:.0f})">{_esc(y_label)}</text>'
    )
    banded = sum(1 for s in series if s.band)
    band_opacity = min(0.12, 0.3 / max(banded, 1))  # overlapping bands stay see-through
    ends = [(i, s.points[-1]) for i, s in enumerate(series) if s.points]
    label_ys = spread_labels([sy(y) + 4 for _i, (_x, y) in ends], pad_t + 8, height - pad_b + 8)
    label_at = {i: y for (i, _end), y in zip(ends, label_ys, strict=True)}
    for i, s in enumerate(series):
        colour, dash = PALETTE[i % len(PALETTE)], DASHES[i % len(DASHES)]
        if s.band:
            upper = " ".join(f"{sx(x):.1f},{sy(clip(hi)):.1f}" for x, _lo, hi in s.band)
            lower = " ".join(f"{sx(x):.1f},{sy(clip(lo)):.1f}" for x, lo, _hi in reversed(s.band))
            out.append(
                f'<polygon points="{upper} {lower}" fill="{colour}" '
                f'fill-opacity="{band_opacity:.2f}" stroke="none">'
                f"<title>{_esc(s.name)} 95% interval</title></polygon>"
            )
        if not s.points:
            continue
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in s.points)
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(
            f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"'
            f"{dash_attr}><title>{_esc(s.name)}</title></polyline>"
        )
        last_x, _last_y = s.points[-1]
        out.append(
            f'<text x="{sx(last_x) + 4:.1f}" y="{label_at[i]:.1f}" fill="{colour}" '
            f'class="label">{_esc(s.name)}</text>'
        )
    out.append("</svg>")
    return "".join(out)


def histogram(
    counts: Mapping[str, int],
    *,
    title: str,
    x_label: str,
    width: int = 640,
    height: int = 200,
) -> str:
    """An SVG bar chart of ``counts`` (bucket label -> count), in the given order."""
    labels = list(counts)
    if not labels or not any(counts.values()):
        return (
            f'<svg class="chart" role="img" viewBox="0 0 {width} 40" aria-label="{_esc(title)}">'
            f'<text x="4" y="24">{_esc(title)}: no data yet</text></svg>'
        )
    pad_l, pad_b, pad_t = 40, 40, 14
    plot_w, plot_h = width - pad_l - 10, height - pad_b - pad_t
    top = max(counts.values())
    bar_w = plot_w / len(labels)
    out = [
        f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" '
        f'aria-label="{_esc(title)}"><title>{_esc(title)}</title>'
    ]
    for i, label in enumerate(labels):
        n = counts[label]
        h = plot_h * n / top
        x = pad_l + i * bar_w
        out.append(
            f'<rect x="{x + 2:.1f}" y="{pad_t + plot_h - h:.1f}" width="{bar_w - 4:.1f}" '
            f'height="{h:.1f}" fill="{PALETTE[0]}"><title>{_esc(label)}: {n}</title></rect>'
            f'<text x="{x + bar_w / 2:.1f}" y="{pad_t + plot_h - h - 2:.1f}" '
            f'text-anchor="middle" class="tick">{n}</text>'
            f'<text x="{x + bar_w / 2:.1f}" y="{pad_t + plot_h + 14}" text-anchor="middle" '
            f'class="tick">{_esc(label)}</text>'
        )
    out.append(
        f'<text x="{pad_l + plot_w / 2:.0f}" y="{height - 4}" text-anchor="middle" '
        f'class="axis">{_esc(x_label)}</text></svg>'
    )
    return "".join(out)
