"""Light constants of the CoMP networks (no JAX): array slots, mobile-env's stations and the model ids.

The task catalogue (``catalog``) reads them before JAX loads; the simulator's modules import them.
"""

from __future__ import annotations

MAX_CELLS = 13
"""Cell slots of every network (the largest mobile-env scenario has 13 stations)."""
MAX_USERS = 30
"""User slots of every network (the largest mobile-env scenario has 30 users)."""

# Station positions (metres), copied from mobile-env 2.1 mobile_env/scenarios/{small,medium,large}.py.
SMALL_STATIONS: tuple[tuple[int, int], ...] = ((110, 130), (65, 80), (120, 30))
"""Station positions of mobile-env's ``MComSmall`` (200 x 200 m, 5 users)."""
MEDIUM_STATIONS: tuple[tuple[int, int], ...] = (
    (95, 240),
    (100, 140),
    (105, 60),
    (35, 200),
    (40, 95),
    (165, 220),
    (160, 110),
)
"""Station positions of mobile-env's ``MComMedium`` (200 x 300 m, 15 users)."""
LARGE_STATIONS: tuple[tuple[int, int], ...] = (
    (50, 100),
    (60, 210),
    (90, 60),
    (120, 130),
    (130, 215),
    (140, 190),
    (160, 70),
    (200, 250),
    (210, 135),
    (230, 70),
    (250, 240),
    (255, 170),
    (265, 50),
)
"""Station positions of mobile-env's ``MComLarge`` (300 x 300 m, 30 users)."""

SCHEDULERS: dict[str, int] = {"resource_fair": 0, "rate_fair": 1, "proportional_fair": 2, "max_capacity": 3}
"""Scheduler names and their ids (``NetworkParams.scheduler``)."""
PATH_LOSS_MODELS: dict[str, int] = {"okumura_hata": 0, "free_space": 1, "umi_nlos": 2}
"""Path-loss model names and their ids (``NetworkParams.path_loss_model``)."""
