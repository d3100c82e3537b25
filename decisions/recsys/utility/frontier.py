"""Front geometry: non-dominated points, hypervolume, and a front's engagement at a given revenue."""

from __future__ import annotations

import numpy as np


def non_dominated(points: np.ndarray) -> np.ndarray:
    """Mask of the points no other point weakly dominates with one strict improvement: (n,) bool."""
    pts = np.asarray(points, dtype=np.float64)
    keep = np.ones(len(pts), dtype=bool)
    for i, p in enumerate(pts):
        better = np.all(pts >= p, axis=1) & np.any(pts > p, axis=1)
        keep[i] = not better.any()
    return keep


def hypervolume(points: np.ndarray, reference: np.ndarray) -> float:
    """Area dominated by ``points`` (n, 2) and above ``reference`` (2,) (both objectives maximised)."""
    pts = np.asarray(points, dtype=np.float64)
    pts = pts[np.all(pts > reference, axis=1)]
    if not len(pts):
        return 0.0
    pts = pts[non_dominated(pts)]
    pts = pts[np.argsort(-pts[:, 0])]
    area, top = 0.0, float(reference[1])
    for x, y in pts:
        if y > top:
            area += (x - reference[0]) * (y - top)
            top = y
    return float(area)


def engagement_at(points: np.ndarray, revenue: float) -> float:
    """Best engagement of a random mix of two of ``points`` (n, 2) whose revenue is at least ``revenue``.

    Returns NaN when no point reaches that revenue.
    """
    pts = np.asarray(points, dtype=np.float64)
    best = np.nan
    for i in range(len(pts)):
        for j in range(len(pts)):
            (e1, r1), (e2, r2) = pts[i], pts[j]
            if r1 >= revenue:
                best = np.fmax(best, e1)
            if r1 < revenue <= r2:
                share = (revenue - r1) / (r2 - r1)
                best = np.fmax(best, e1 + share * (e2 - e1))
    return float(best)


def points_beyond(candidates: np.ndarray, front: np.ndarray, tolerance: float = 1e-9) -> int:
    """How many ``candidates`` lie strictly above every random mix of ``front``'s points (concave parts
    that mixing the linear sweep's policies cannot reach)."""
    count = 0
    for engagement, revenue in np.asarray(candidates, dtype=np.float64):
        reachable = engagement_at(front, revenue)
        if np.isnan(reachable) or engagement > reachable + tolerance:
            count += 1
    return count


def points_undominated_by(candidates: np.ndarray, front: np.ndarray) -> int:
    """How many ``candidates`` no single point of ``front`` weakly dominates (new deterministic trade-offs,
    which a random mix of ``front``'s points may still beat: see ``points_beyond``)."""
    front = np.asarray(front, dtype=np.float64)
    count = 0
    for point in np.asarray(candidates, dtype=np.float64):
        if not np.any(np.all(front >= point, axis=1)):
            count += 1
    return count
