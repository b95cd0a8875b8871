"""What a reader sees on a page, measured by the browser that laid it out (JavaScript run by devtools.Page)."""

from __future__ import annotations

from typing import Any

from tests.browser.devtools import Page

# Every pair of text elements of one drawing whose boxes overlap by more than half a pixel. A box is the text's
# own box turned as the text is (its corners through the element's screen transform): two labels turned 45
# degrees side by side do not touch, though the upright rectangles around them would.
_OVERLAPS = """
(() => {
  const corners = t => {
    const b = t.getBBox(), m = t.getScreenCTM();
    return [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height], [b.x, b.y + b.height]]
      .map(([x, y]) => new DOMPoint(x, y).matrixTransform(m)).map(p => [p.x, p.y]);
  };
  // Separating axes of two convex quadrilaterals: the depth of their overlap along each edge's normal.
  const depth = (p, q) => {
    let least = Infinity;
    for (const poly of [p, q]) for (let i = 0; i < 4; i++) {
      const [x1, y1] = poly[i], [x2, y2] = poly[(i + 1) % 4];
      const length = Math.hypot(x2 - x1, y2 - y1) || 1, nx = (y1 - y2) / length, ny = (x2 - x1) / length;
      const span = poly => poly.map(([x, y]) => x * nx + y * ny);
      const a = span(p), b = span(q);
      least = Math.min(least, Math.min(Math.max(...a), Math.max(...b)) - Math.max(Math.min(...a), Math.min(...b)));
    }
    return least;
  };
  const found = [];
  document.querySelectorAll('svg').forEach((svg, index) => {
    const boxes = [...svg.querySelectorAll('text')]
      .filter(t => t.textContent.trim() && t.getBoundingClientRect().width > 0)
      .map(t => [t.textContent.trim(), corners(t)]);
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
      const overlap = depth(boxes[i][1], boxes[j][1]);
      if (overlap > 0.5) found.push({drawing: index, labels: [boxes[i][0], boxes[j][0]], overlap});
    }
  });
  return found;
})()
"""

# Every plotted point (a line's vertices, a marker, a bar's corners) that falls inside a legend's box.
_COVERED = """
(() => {
  const found = [];
  let legends = 0, points = 0;
  document.querySelectorAll('svg').forEach((svg, index) => {
    const boxes = [...svg.querySelectorAll('[id*="kflow-legend-"]')].map(g => g.getBoundingClientRect());
    legends += boxes.length;
    const inside = (x, y) => boxes.some(b => x > b.left && x < b.right && y > b.top && y < b.bottom);
    svg.querySelectorAll('[id*="kflow-data-"]').forEach(group => {
      group.querySelectorAll('path, use, rect, image').forEach(shape => {
        let spots = [];
        if (shape.tagName === 'path' && shape.getTotalLength && shape.closest('defs') === null) {
          const length = shape.getTotalLength(), matrix = shape.getScreenCTM();
          const n = Math.min(200, Math.max(2, Math.ceil(length / 2)));
          for (let k = 0; k <= n; k++) {
            const p = shape.getPointAtLength(length * k / n);
            const s = new DOMPoint(p.x, p.y).matrixTransform(matrix);
            spots.push([s.x, s.y]);
          }
        } else {
          const r = shape.getBoundingClientRect();
          spots = [[(r.left + r.right) / 2, (r.top + r.bottom) / 2], [r.left + 1, r.top + 1], [r.right - 1, r.top + 1]];
        }
        points += spots.length;
        spots.filter(([x, y]) => inside(x, y)).forEach(([x, y]) => found.push({drawing: index, id: group.id, x, y}));
      });
    });
  });
  return {found, legends, points};
})()
"""

# The tick labels of the drawing whose accessible name is `title`, in reading order along the axis.
_TICKS = """
((title, axis) => {
  const svg = [...document.querySelectorAll('svg')].find(s => s.getAttribute('aria-label') === title);
  if (!svg) return null;
  return [...svg.querySelectorAll(`[id*="${axis}tick_"] text`)]
    .map(t => [t.textContent.trim(), t.getBoundingClientRect()])
    .filter(([text, r]) => text && r.width > 0)
    .sort((a, b) => axis === 'x' ? a[1].left - b[1].left : a[1].top - b[1].top)
    .map(([text]) => text);
})
"""

_LINKS = """
[...document.querySelectorAll('a[href]')].map(a => ({text: a.textContent.trim(), href: a.getAttribute('href'),
  url: a.href, target: a.hash && a.href.split('#')[0] === location.href.split('#')[0]
    ? !!document.getElementById(decodeURIComponent(a.hash.slice(1))) : null}))
"""


def overlapping_labels(page: Page) -> list[dict[str, Any]]:
    return page.evaluate(_OVERLAPS)


def points_under_legends(page: Page) -> dict[str, Any]:
    return page.evaluate(_COVERED)


def tick_labels(page: Page, title: str, axis: str) -> list[str] | None:
    import json

    return page.evaluate(f"{_TICKS}({json.dumps(title)}, {json.dumps(axis)})")


def links(page: Page) -> list[dict[str, Any]]:
    return page.evaluate(_LINKS)


def table_rows(page: Page, selector: str) -> list[list[str]]:
    import json

    return page.evaluate(
        f"[...document.querySelectorAll({json.dumps(selector)} + ' tr')].slice(1)"
        ".map(row => [...row.cells].map(cell => cell.textContent.trim()))"
    )
