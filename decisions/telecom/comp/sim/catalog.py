"""CoMP tasks by name (``Task``, the training, unseen and joint-transmission sets), with no JAX.

A ``Task`` names one network (cells, users, scheduler, station layout, channel); ``task.params()`` builds
its ``NetworkParams``, ``task.name`` is a stable id (``"c7-u15-resource_fair-s0"``) and
``task.features()`` the vector multi-task policies read. No unseen task shares a (cells, users,
scheduler) triple with a training task. The job's spec checks task names here before JAX loads.
``OwnTask`` is a network of one's own as a task: its cells' places, powers, bandwidths and frequencies
and where its users start.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from decisions.telecom.comp.sim.constants import (
    LARGE_STATIONS,
    MAX_CELLS,
    MAX_USERS,
    MEDIUM_STATIONS,
    SCHEDULERS,
    SMALL_STATIONS,
)
from decisions.telecom.comp.sim.settings import UE_VELOCITY, NetworkSettings

if TYPE_CHECKING:
    from decisions.telecom.comp.sim.network import NetworkParams

MIN_TASK_CELLS, MAX_TASK_CELLS = 3, MAX_CELLS
"""Range of a task's number of cells."""
MIN_TASK_USERS, MAX_TASK_USERS = 5, MAX_USERS
"""Range of a task's number of users."""
SCHEDULER_NAMES: tuple[str, ...] = tuple(sorted(SCHEDULERS, key=SCHEDULERS.__getitem__))
"""Scheduler names in id order (the order of the one-hot in ``Task.features``)."""
LAYOUTS = ("random", "mobile_env")
"""Station layouts: uniform random stations from ``layout_seed``, or mobile-env's stations."""
CHANNELS = ("mobile_env", "joint")
"""Rate models: mobile-env's (SNR, per-link rates summed, its utility) or joint transmission with
interference over 3GPP UMi NLOS path loss on a map ``JOINT_SCALE`` times larger, QoE on Mbit/s
(``network.as_joint``)."""
JOINT_SCALE = 3.0
"""Stations, map and user speed of a ``joint`` task: mobile-env's (or the random layouts') times 3,
so neighbouring stations sit 100-300 m apart, as urban small cells do; at mobile-env's own spacing
(tens of metres) every cell drowns in its neighbours' interference and serving every user from every
cell wins."""
FEATURE_DIM = 2 + len(SCHEDULER_NAMES)
"""Length of ``Task.features()``: n_cells / MAX_CELLS, n_users / MAX_USERS, one-hot scheduler."""

# mobile-env scenario by its number of stations: (stations, map size, area users roam).
_MOBILE_ENV_LAYOUTS: dict[
    int, tuple[tuple[tuple[int, int], ...], tuple[float, float], tuple[float, float]]
] = {
    3: (SMALL_STATIONS, (200.0, 200.0), (200.0, 200.0)),
    7: (MEDIUM_STATIONS, (200.0, 300.0), (200.0, 200.0)),
    13: (LARGE_STATIONS, (300.0, 300.0), (200.0, 200.0)),
}
RANDOM_LAYOUT_SIZE = (200.0, 200.0)
"""Map (and roaming area) of random layouts, mobile-env's default area."""


def _check_int(field: str, value: Any, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{field}: must be an integer, got {value!r}")
    if value < low or (high is not None and value > high):
        bound = f"in {low}..{high}" if high is not None else f">= {low}"
        raise ValueError(f"{field}: must be {bound}, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class Task:
    """One CoMP network (frozen, hashable; ``ValueError`` naming a bad field): 3..13 ``n_cells``, 5..30
    ``n_users``, a ``scheduler`` of ``SCHEDULERS``, a ``layout`` (``"random"`` stations from
    ``layout_seed``, or ``"mobile_env"``'s for 3, 7 or 13 cells) and a ``channel`` of ``CHANNELS``."""

    n_cells: int
    n_users: int
    scheduler: str = "resource_fair"
    layout_seed: int = 0
    layout: str = "random"
    channel: str = "mobile_env"

    def __post_init__(self) -> None:
        """Validate every field."""
        object.__setattr__(
            self, "n_cells", _check_int("n_cells", self.n_cells, MIN_TASK_CELLS, MAX_TASK_CELLS)
        )
        object.__setattr__(
            self, "n_users", _check_int("n_users", self.n_users, MIN_TASK_USERS, MAX_TASK_USERS)
        )
        if not isinstance(self.scheduler, str) or self.scheduler not in SCHEDULERS:
            raise ValueError(f"scheduler: must be one of {list(SCHEDULER_NAMES)}, got {self.scheduler!r}")
        object.__setattr__(self, "layout_seed", _check_int("layout_seed", self.layout_seed, 0))
        if self.layout not in LAYOUTS:
            raise ValueError(f"layout: must be one of {list(LAYOUTS)}, got {self.layout!r}")
        if self.channel not in CHANNELS:
            raise ValueError(f"channel: must be one of {list(CHANNELS)}, got {self.channel!r}")
        if self.layout == "mobile_env" and self.n_cells not in _MOBILE_ENV_LAYOUTS:
            raise ValueError(
                f"layout: 'mobile_env' needs n_cells in {sorted(_MOBILE_ENV_LAYOUTS)}, got {self.n_cells}"
            )

    @property
    def name(self) -> str:
        """Stable id, e.g. ``"c7-u15-resource_fair-s0"`` (``"...-me"`` for a mobile-env layout, ``"...-jt"``
        appended for the joint channel)."""
        suffix = "me" if self.layout == "mobile_env" else f"s{self.layout_seed}"
        joint = "-jt" if self.channel == "joint" else ""
        return f"c{self.n_cells}-u{self.n_users}-{self.scheduler}-{suffix}{joint}"

    @property
    def config_key(self) -> tuple[int, int, str]:
        """``(n_cells, n_users, scheduler)``: what unseen tasks must not share with training tasks."""
        return (self.n_cells, self.n_users, self.scheduler)

    def params(self) -> NetworkParams:
        """The task's ``NetworkParams`` (mobile-env defaults for everything but the fields above)."""
        import jax  # the simulator (JAX) loads only when a network is built

        from decisions.telecom.comp.sim.network import as_joint, make_network

        if self.layout == "mobile_env":
            stations, size, roam = _MOBILE_ENV_LAYOUTS[self.n_cells]
            settings = NetworkSettings(n_cells=self.n_cells, n_users=self.n_users, scheduler=self.scheduler,
                                       positions=stations, size=size, roam_size=roam)  # fmt: skip
            net = make_network(settings)
        else:
            settings = NetworkSettings(n_cells=self.n_cells, n_users=self.n_users, scheduler=self.scheduler,
                                       size=RANDOM_LAYOUT_SIZE)  # fmt: skip
            net = make_network(settings, jax.random.PRNGKey(self.layout_seed))
        return as_joint(net, JOINT_SCALE) if self.channel == "joint" else net

    def features(self) -> np.ndarray:
        """``(FEATURE_DIM,)`` float32: n_cells / 13, n_users / 30, one-hot scheduler."""
        out = np.zeros((FEATURE_DIM,), np.float32)
        out[0] = self.n_cells / MAX_CELLS
        out[1] = self.n_users / MAX_USERS
        out[2 + SCHEDULERS[self.scheduler]] = 1.0
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-able fields (``Task.from_dict`` inverts it)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Task:
        """Rebuild (and validate) a task from ``to_dict``'s output (an ``OwnTask`` by its layout)."""
        if data.get("layout") == OWN_LAYOUT:
            return OwnTask.from_dict(data)
        return cls(**data)

    def __str__(self) -> str:
        return self.name


OWN_LAYOUT = "own"
"""``Task.layout`` of an ``OwnTask`` (``Task.from_dict`` rebuilds one by it)."""

Cell = tuple[float, float, float, float, float, float]
"""One cell: x, y (m), transmit power (dBm), bandwidth (Hz), frequency (MHz), antenna height (m)."""


@dataclass(frozen=True)
class OwnTask(Task):
    """A network of one's own (frozen, hashable; ``ValueError`` naming a bad field): 1 to ``MAX_CELLS``
    ``cells`` and ``n_users`` 1 to ``MAX_USERS`` users; ``user_home`` and ``user_spread`` (one per user)
    place each user's start in the square of that half-side about that point (0: exactly there), or,
    when empty, uniformly over the ``size`` area."""

    layout: str = OWN_LAYOUT
    label: str = "own"
    cells: tuple[Cell, ...] = ()
    size: tuple[float, float] = (200.0, 200.0)
    user_home: tuple[tuple[float, float], ...] = ()
    user_spread: tuple[float, ...] = ()
    velocity: float = UE_VELOCITY

    def __post_init__(self) -> None:
        """Validate every field."""
        if not 1 <= len(self.cells) <= MAX_CELLS or self.n_cells != len(self.cells):
            raise ValueError(f"cells: 1 to {MAX_CELLS} cells, n_cells their number; got {len(self.cells)}")
        if not 1 <= self.n_users <= MAX_USERS:
            raise ValueError(f"n_users: must be in 1..{MAX_USERS}, got {self.n_users}")
        if self.scheduler not in SCHEDULERS:
            raise ValueError(f"scheduler: must be one of {list(SCHEDULER_NAMES)}, got {self.scheduler!r}")
        if self.layout != OWN_LAYOUT or self.channel != "mobile_env":
            raise ValueError(f"layout: an own network has layout {OWN_LAYOUT!r} and mobile-env's channel")
        if len(self.user_home) != len(self.user_spread) or len(self.user_home) not in (0, self.n_users):
            raise ValueError(f"user_home: one start point and spread per user ({self.n_users}) or none")
        if not (math.isfinite(self.velocity) and self.velocity >= 0):
            raise ValueError(f"velocity: must be a finite number >= 0, got {self.velocity!r}")

    @property
    def name(self) -> str:
        """Stable id, e.g. ``"own-campus-c5-u12-resource_fair"``."""
        return f"own-{self.label}-c{self.n_cells}-u{self.n_users}-{self.scheduler}"

    def params(self) -> NetworkParams:
        """The network's ``NetworkParams``: each cell's own power, bandwidth, frequency and height."""
        import jax.numpy as jnp

        from decisions.telecom.comp.sim.network import make_network

        cells = np.asarray(self.cells, np.float32)
        settings = NetworkSettings(n_cells=self.n_cells, n_users=self.n_users, scheduler=self.scheduler,
                                   positions=tuple((float(x), float(y)) for x, y in cells[:, :2]), size=self.size,
                                   velocity=self.velocity)
        net = make_network(settings)

        def per_cell(column: int, padding: np.ndarray) -> Any:
            values = np.asarray(padding, np.float32).copy()
            values[: self.n_cells] = cells[:, column]
            return jnp.asarray(values)

        net = net.replace(cell_tx_dbm=per_cell(2, net.cell_tx_dbm), cell_bandwidth_hz=per_cell(3, net.cell_bandwidth_hz),
                          cell_freq_mhz=per_cell(4, net.cell_freq_mhz), cell_height_m=per_cell(5, net.cell_height_m))
        if not self.user_home:
            return net
        home = np.zeros((MAX_USERS, 2), np.float32)
        spread = np.full(MAX_USERS, -1.0, np.float32)
        home[: self.n_users] = self.user_home
        spread[: self.n_users] = self.user_spread
        return net.replace(user_home=jnp.asarray(home), user_spread=jnp.asarray(spread))

    def to_dict(self) -> dict[str, Any]:
        """JSON- and msgpack-able fields, tuples as lists (``Task.from_dict`` inverts it)."""
        return {key: _lists(value) for key, value in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OwnTask:
        """Rebuild (and validate) a network from ``to_dict``'s output (lists read back as tuples)."""
        fields = dict(data)
        fields["cells"] = tuple(tuple(float(v) for v in cell) for cell in fields.get("cells", ()))
        fields["user_home"] = tuple(tuple(float(v) for v in p) for p in fields.get("user_home", ()))
        fields["user_spread"] = tuple(float(v) for v in fields.get("user_spread", ()))
        fields["size"] = tuple(float(v) for v in fields.get("size", (200.0, 200.0)))
        return cls(**fields)


def _lists(value: Any) -> Any:
    """``value`` with its tuples, nested too, as lists."""
    return [_lists(v) for v in value] if isinstance(value, tuple | list) else value


TRAINING_TASKS: tuple[Task, ...] = (
    # mobile-env's scenarios with its resource-fair scheduler
    Task(3, 5, "resource_fair", layout="mobile_env"),
    Task(7, 15, "resource_fair", layout="mobile_env"),
    Task(13, 30, "resource_fair", layout="mobile_env"),
    # random layouts spanning sizes and schedulers
    Task(3, 5, "rate_fair", 1),
    Task(4, 8, "proportional_fair", 2),
    Task(5, 10, "resource_fair", 3),
    Task(5, 12, "max_capacity", 4),
    Task(6, 20, "rate_fair", 5),
    Task(8, 16, "proportional_fair", 6),
    Task(9, 25, "resource_fair", 7),
    Task(10, 20, "max_capacity", 8),
    Task(11, 30, "rate_fair", 9),
    Task(13, 25, "proportional_fair", 10),
)
"""Tasks of the offline training data (13: mobile-env small/medium/large + 10 random layouts)."""

UNSEEN_TASKS: tuple[Task, ...] = (
    Task(4, 12, "resource_fair", 100),  # cell/user counts not in training
    Task(7, 15, "max_capacity", layout="mobile_env"),  # mobile-env medium with an unseen scheduler
    Task(12, 28, "proportional_fair", 101),  # large, counts not in training
    Task(6, 9, "rate_fair", 102),  # few users per cell, counts not in training
)
"""Held-out tasks: no (n_cells, n_users, scheduler) triple of these occurs in ``TRAINING_TASKS``."""


JOINT_CANDIDATE_TASKS: tuple[Task, ...] = tuple(
    Task(c, u, sched, seed, layout, channel="joint")
    for c, u, sched, seed, layout in (
        (7, 15, "resource_fair", 0, "mobile_env"),
        (13, 30, "resource_fair", 0, "mobile_env"),
        (7, 15, "proportional_fair", 0, "mobile_env"),
        (13, 30, "rate_fair", 0, "mobile_env"),
        (4, 12, "proportional_fair", 20, "random"),
        (5, 15, "rate_fair", 21, "random"),
        (5, 18, "resource_fair", 40, "random"),
        (6, 20, "resource_fair", 22, "random"),
        (6, 25, "proportional_fair", 41, "random"),
        (8, 24, "proportional_fair", 23, "random"),
        (8, 28, "resource_fair", 46, "random"),
        (9, 30, "rate_fair", 24, "random"),
        (9, 20, "resource_fair", 42, "random"),
        (10, 25, "resource_fair", 25, "random"),
        (10, 30, "rate_fair", 43, "random"),
        (11, 30, "proportional_fair", 26, "random"),
        (12, 28, "rate_fair", 27, "random"),
        (12, 22, "proportional_fair", 44, "random"),
        (4, 16, "rate_fair", 45, "random"),
        (6, 14, "max_capacity", 47, "random"),
    )
)
"""Joint-transmission networks measured by ``spread`` for the second CoMP study: the study's
training and unseen networks are chosen from these by their spread."""

JOINT_TRAINING_TASKS: tuple[Task, ...] = tuple(
    t for t in JOINT_CANDIDATE_TASKS
    if (t.layout_seed, t.layout, t.scheduler) in {
        (0, "mobile_env", "resource_fair"), (20, "random", "proportional_fair"), (21, "random", "rate_fair"),
        (22, "random", "resource_fair"), (23, "random", "proportional_fair"), (24, "random", "rate_fair"),
        (25, "random", "resource_fair"), (26, "random", "proportional_fair"), (27, "random", "rate_fair"),
    }
)
"""The second study's training networks (10): mobile-env's medium and large layouts with resource-fair
scheduling and eight random layouts of 4-12 cells and 12-30 users."""

JOINT_EXCLUDED: dict[str, str] = {
    "c4-u16-rate_fair-s45-jt": "serving every user from every cell beats the planner (stations clustered)",
    "c6-u14-max_capacity-s47-jt": "every policy's cell-edge rate is 0 (one user takes the whole cell)",
}
"""Candidates left out of the second study, with the reason (``python -m decisions.telecom.comp.study.spread``)."""

JOINT_UNSEEN_TASKS: tuple[Task, ...] = tuple(
    t for t in JOINT_CANDIDATE_TASKS if t not in JOINT_TRAINING_TASKS and t.name not in JOINT_EXCLUDED
)
"""The second study's unseen networks (8): new layouts with new cell and user counts, and mobile-env's
medium and large layouts with schedulers never paired with them in training."""


def task_by_name(name: str) -> Task:
    """The training, unseen or joint task called ``name`` (``ValueError`` when there is none)."""
    for task in (*TRAINING_TASKS, *UNSEEN_TASKS, *JOINT_CANDIDATE_TASKS):
        if task.name == name:
            return task
    raise ValueError(f"name: no task called {name!r}")
