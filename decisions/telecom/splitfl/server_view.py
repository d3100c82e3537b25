"""What the server knows before a round, and its forecasts of the round's background load and links.

A round's CPU share and link factor are drawn by the fleet model before the round (``fleet.FleetState``)
and no server knows them until the round has run. What it has at the start of round ``t``:

- each client's capability report at check-in: whether it takes part (enrolled, charged, not missing
  the round), its battery's charge and capacity, its memory and nominal rates (its tier);
- what each client measured in the earlier rounds it was available for and did not run out of battery
  in: its free CPU share and link-rate factor (what the server also reads off the round's measured compute
  and transfer durations at the split it set).

``ServerView`` keeps those measurements per client: the last one, the last ``window`` ones and an
exponentially smoothed one (weight ``alpha`` on the newest); a client never measured, or a fresh device
that joined its slot, is forecast at the load's and link's long-run means. ``seen_state`` is the fleet as
a strategy with a given information sees it: the oracle sees the round's draws, the others the report
and a forecast (``INFORMATION``) in place of the draws.
"""

from __future__ import annotations

import jax.numpy as jnp
from flax import struct
from jax import Array

from decisions.telecom.splitfl import fleet as fl

INFORMATION = ("oracle", "last", "mean", "smoothed")
"""What a strategy sees of the round's load and links: the round's draws (no server can), the last
measurement, the mean of the last ``window`` ones, the exponentially smoothed one."""


@struct.dataclass
class ServerView:
    """The server's measurements per client, each ``(n,)`` (``recent_*`` and ``filled``: ``(window, n)``)."""

    last_cpu: Array
    last_link: Array
    recent_cpu: Array
    recent_link: Array
    filled: Array
    """Which of the ``recent_*`` slots hold a measurement."""
    slot: Array
    """Where each client's next measurement goes in ``recent_*`` (a ring)."""
    smooth_cpu: Array
    smooth_link: Array
    measured: Array
    """Whether the client (this device in its slot) was ever measured."""
    age: Array
    """Rounds since the client's last measurement."""


def prior(p: fl.FleetParams) -> tuple[Array, Array]:
    """``(cpu, link)`` long-run means, each ``(n,)``: the free CPU share's and the link factor's (1)."""
    n = p.clients
    return jnp.full(n, (p.cpu_share_min + 1.0) / 2.0), jnp.ones(n)


def initial_view(p: fl.FleetParams, window: int) -> ServerView:
    """The view before round 0: nothing measured (``window`` >= 1 measurements kept for the mean)."""
    cpu, link = prior(p)
    n = p.clients
    zeros = jnp.zeros((window, n))
    return ServerView(cpu, link, zeros, zeros, jnp.zeros((window, n), bool), jnp.zeros(n, jnp.int32), cpu, link,
                      jnp.zeros(n, bool), jnp.zeros(n, jnp.float32))


def _forget(view: ServerView, p: fl.FleetParams, slots: Array) -> ServerView:
    """The view with the clients in ``slots`` (``(n,)`` bool) back to nothing measured."""
    fresh = initial_view(p, view.filled.shape[0])
    return ServerView(*(jnp.where(slots, new, old) for new, old in zip(
        _fields(fresh), _fields(view), strict=True)))


def _fields(view: ServerView) -> tuple[Array, ...]:
    return (view.last_cpu, view.last_link, view.recent_cpu, view.recent_link, view.filled, view.slot,
            view.smooth_cpu, view.smooth_link, view.measured, view.age)


def observe(
    view: ServerView, before: fl.FleetState, outcome: fl.RoundOutcome, after: fl.FleetState, p: fl.FleetParams,
    alpha: float,
) -> ServerView:
    """The view after a round: ``before`` and ``outcome`` the round's state and outcome, ``after`` the next.

    Clients available for the round that did not run out of battery report what they measured (the
    round's CPU share and link factor); a device that joined an empty slot is new to the server.
    """
    got = outcome.eligible & ~outcome.died
    cpu, link = before.cpu_share, before.link_factor
    window = view.filled.shape[0]
    at = (jnp.arange(window)[:, None] == view.slot[None, :]) & got[None, :]
    smooth = lambda old, new: jnp.where(view.measured, alpha * new + (1 - alpha) * old, new)  # noqa: E731
    seen = ServerView(
        last_cpu=jnp.where(got, cpu, view.last_cpu),
        last_link=jnp.where(got, link, view.last_link),
        recent_cpu=jnp.where(at, cpu[None, :], view.recent_cpu),
        recent_link=jnp.where(at, link[None, :], view.recent_link),
        filled=view.filled | at,
        slot=jnp.where(got, (view.slot + 1) % window, view.slot),
        smooth_cpu=jnp.where(got, smooth(view.smooth_cpu, cpu), view.smooth_cpu),
        smooth_link=jnp.where(got, smooth(view.smooth_link, link), view.smooth_link),
        measured=view.measured | got,
        age=jnp.where(got, 0.0, view.age + 1.0),
    )
    return _forget(seen, p, fl.present(after, p) & ~fl.present(before, p))


def forecast(view: ServerView, information: str) -> tuple[Array, Array]:
    """``(cpu_share, link_factor)`` forecast for the next round, each ``(n,)`` (``information`` not oracle)."""
    if information == "last":
        return view.last_cpu, view.last_link
    if information == "smoothed":
        return view.smooth_cpu, view.smooth_link
    if information != "mean":
        raise ValueError(f"information: {information!r} is not a forecast (one of {INFORMATION[1:]})")
    count = jnp.sum(view.filled, axis=0)
    mean = lambda buf, none: jnp.where(count > 0, jnp.sum(jnp.where(view.filled, buf, 0.0), axis=0)  # noqa: E731
                                       / jnp.maximum(count, 1), none)
    return mean(view.recent_cpu, view.last_cpu), mean(view.recent_link, view.last_link)


def seen_state(view: ServerView, state: fl.FleetState, information: str) -> fl.FleetState:
    """The fleet as a strategy with ``information`` sees it before the round (module docstring).

    The oracle sees ``state``; any other sees its report (availability, battery, capacity, enrolment)
    with the forecast in place of the round's CPU share and link factor, and no latent draws.
    """
    if information == "oracle":
        return state
    cpu, link = forecast(view, information)
    return fl.FleetState(state.battery_j, state.powered, state.available, cpu.astype(jnp.float32),
                         link.astype(jnp.float32), state.capacity_j, state.present)
