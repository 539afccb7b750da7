"""A line chart as SVG text, for the reports' charts.

Written here rather than with a plotting library: matplotlib's import alone takes about a
second, which every run paid for its convergence charts (issue 28); this takes milliseconds
and imports nothing. The charts need only lines on a 0-1 score axis over whole-number x
values, a reference line, a legend and a title.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

WIDTH, HEIGHT = 700, 400
LEFT, RIGHT, TOP, BOTTOM = 70, WIDTH - 20, 40, HEIGHT - 55
"""The plot area inside the picture, in pixels; the margins hold the ticks, labels and title."""
Y_TOP = 1.02
"""The score axis runs from 0 to a little above 1, so that a line at 1.0 stays visible."""
COLORS = ("#1f77b4", "#ff7f0e")
FONT = 'font-family="DejaVu Sans, Arial, sans-serif"'
CHAR_WIDTH = 7
"""A generous width of one 12 px character, to size the legend's box without measuring text."""
MOST_X_TICKS = 10


@dataclass(frozen=True)
class Line:
    label: str
    points: Sequence[tuple[int, float]]
    """(x, score) in x order."""
    markers: bool = False


@dataclass(frozen=True)
class Rule:
    """A dashed vertical line at ``x``, named in the legend."""

    x: int
    label: str


@dataclass(frozen=True)
class LineChart:
    title: str
    x_label: str
    y_label: str
    lines: Sequence[Line]
    rule: Rule | None = None
    legend_left: bool = False
    """The legend in the lower left corner instead of the lower right."""

    def svg(self) -> str:
        scale = _Scale.over([x for line in self.lines for x, _ in line.points])
        parts = [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
            f'viewBox="0 0 {WIDTH} {HEIGHT}" {FONT} font-size="12">',
            f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
            *_grid(scale),
            f'<rect x="{LEFT}" y="{TOP}" width="{RIGHT - LEFT}" height="{BOTTOM - TOP}" '
            'fill="none" stroke="black"/>',
            _text(WIDTH / 2, TOP - 14, self.title, size=14),
            _text((LEFT + RIGHT) / 2, HEIGHT - 12, self.x_label),
            _text(18, (TOP + BOTTOM) / 2, self.y_label, rotate=True),
        ]
        if self.rule is not None:
            x = scale.x(self.rule.x)
            parts.append(f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{BOTTOM}" '
                         'stroke="grey" stroke-dasharray="6 4"/>')
        for line, color in zip(self.lines, COLORS, strict=False):
            parts += _polyline(line, color, scale)
        parts += self._legend()
        return "\n".join([*parts, "</svg>", ""])

    def _legend(self) -> list[str]:
        entries = [(line.label, f'stroke="{color}"')
                   for line, color in zip(self.lines, COLORS, strict=False)]
        if self.rule is not None:
            entries.append((self.rule.label, 'stroke="grey" stroke-dasharray="6 4"'))
        width = 40 + CHAR_WIDTH * max(len(label) for label, _ in entries)
        height = 8 + 18 * len(entries)
        left = LEFT + 10 if self.legend_left else RIGHT - 10 - width
        top = BOTTOM - 10 - height
        parts = [f'<rect x="{left}" y="{top}" width="{width}" height="{height}" fill="white" '
                 'fill-opacity="0.8" stroke="#cccccc" rx="3"/>']
        for row, (label, stroke) in enumerate(entries):
            y = top + 13 + 18 * row
            parts.append(f'<line x1="{left + 8}" y1="{y}" x2="{left + 30}" y2="{y}" '
                         f'{stroke} stroke-width="2"/>')
            parts.append(_text(left + 36, y + 4, label, anchor="start"))
        return parts


@dataclass(frozen=True)
class _Scale:
    """Chart values to pixels: x over [low, high], scores over [0, Y_TOP]."""

    low: int
    high: int

    @classmethod
    def over(cls, xs: Sequence[int]) -> _Scale:
        """The x values' range, widened by one each way when they are all one value."""
        low, high = min(xs), max(xs)
        return cls(low - 1, high + 1) if low == high else cls(low, high)

    def x(self, value: float) -> float:
        return LEFT + (value - self.low) / (self.high - self.low) * (RIGHT - LEFT)

    @staticmethod
    def y(score: float) -> float:
        return BOTTOM - score / Y_TOP * (BOTTOM - TOP)

    def x_ticks(self) -> range:
        """Whole numbers 1, 2 or 5 x 10^k apart, at most :data:`MOST_X_TICKS` of them."""
        span = self.high - self.low
        magnitude = 10 ** math.floor(math.log10(span))
        step = next(s for s in (magnitude // 10, magnitude // 5, magnitude // 2, magnitude,
                                2 * magnitude, 5 * magnitude, 10 * magnitude)
                    if s >= 1 and span / s <= MOST_X_TICKS)
        return range(-(-self.low // step) * step, self.high + 1, step)


def _grid(scale: _Scale) -> list[str]:
    parts = []
    for tick in (i / 5 for i in range(6)):
        y = scale.y(tick)
        parts.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{RIGHT}" y2="{y:.1f}" '
                     'stroke="#dddddd"/>')
        parts.append(_text(LEFT - 6, y + 4, f"{tick:.1f}", anchor="end"))
    for tick in scale.x_ticks():
        x = scale.x(tick)
        parts.append(f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{BOTTOM}" '
                     'stroke="#dddddd"/>')
        parts.append(_text(x, BOTTOM + 16, str(tick)))
    return parts


def _polyline(line: Line, color: str, scale: _Scale) -> list[str]:
    coordinates = [(scale.x(x), scale.y(y)) for x, y in line.points]
    points = " ".join(f"{x:.1f},{y:.1f}" for x, y in coordinates)
    parts = [f'<polyline points="{points}" fill="none" stroke="{color}" stroke-width="2"/>']
    if line.markers:
        parts += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{color}"/>'
                  for x, y in coordinates]
    return parts


def _text(x: float, y: float, text: str, *, anchor: str = "middle", size: int = 12,
          rotate: bool = False) -> str:
    turn = f' transform="rotate(-90 {x:.1f} {y:.1f})"' if rotate else ""
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}"{turn}>'
            f"{escape(text)}</text>")
