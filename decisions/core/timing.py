"""Honest wall-clock timing for the benches: best-of-n, interleaved, compile excluded.

Every bench that reports a speed-up times both sides the same way:

- ``best_of``: the fastest of ``repeats`` calls after ``warmup`` untimed calls (the
  first one compiles), blocking on JAX results with ``jax.block_until_ready``. On a
  shared, noisy machine load only ever makes a call slower, so the minimum is the
  best estimate of the call's own cost.
- ``interleaved``: best-of-n of several functions timed in round-robin rounds, so
  load from other processes falls on all of them alike and cannot favour one.
- ``bump_and_revalue``: finite-difference bump-and-revalue (the base and one bump
  of every scalar input) against one reverse pass. Bump-and-revalue is costed at
  its fastest honest rate: a Python loop over jitted single revaluations or a
  jitted ``vmap`` over chunks of bumped inputs, whichever is cheaper per
  revaluation, each at its best measured time; the reverse pass too is best-of-n,
  all interleaved. Costing the loop at its best single call (rather than timing
  the whole loop once) favours bump-and-revalue, so the speed-up is conservative.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

PyTree = Any
Clock = Callable[[], float]

LOOP = "loop_of_jitted_calls"
"""Name of the bump method that loops over jitted single revaluations."""

VMAP_PREFIX = "jitted_vmap_"
"""Name prefix of the bump methods that revalue a chunk of bumped inputs in one jitted ``vmap``."""

VMAP_CHUNKS: tuple[int, ...] = (2, 4, 8)
"""Bumped inputs per jitted ``vmap`` call tried by default."""


def interleaved(
    fns: Mapping[str, Callable[[], Any]],
    repeats: int,
    *,
    warmup: int = 1,
    clock: Clock = time.perf_counter,
) -> dict[str, float]:
    """Best wall seconds of each function, timed in interleaved rounds.

    Each function is first called ``warmup`` times untimed (compilation), then
    ``repeats`` rounds call every function once each (the starting function
    rotating from round to round), so a burst of load on a shared machine slows
    them alike. JAX results are waited for with ``jax.block_until_ready``.

    Args:
        fns: named zero-argument callables.
        repeats: timed calls of each function (at least 1).
        warmup: untimed calls of each function before timing (0 or more).
        clock: the timer (seconds); ``time.perf_counter`` unless testing.

    Returns:
        ``{name: fastest timed call in seconds}``.

    Raises:
        ValueError: ``repeats < 1`` or ``warmup < 0``.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    if warmup < 0:
        raise ValueError(f"warmup must be 0 or more, got {warmup}")
    names = list(fns)
    for name in names:
        for _ in range(warmup):
            jax.block_until_ready(fns[name]())
    best = dict.fromkeys(names, float("inf"))
    for round_ in range(repeats):
        for i in range(len(names)):
            name = names[(round_ + i) % len(names)]
            start = clock()
            jax.block_until_ready(fns[name]())
            best[name] = min(best[name], clock() - start)
    return best


def best_of(
    fn: Callable[[], Any], repeats: int, *, warmup: int = 1, clock: Clock = time.perf_counter
) -> float:
    """Best wall seconds of ``fn()`` over ``repeats`` calls, after ``warmup`` untimed calls.

    Args:
        fn: zero-argument callable (JAX results are waited for).
        repeats: timed calls (at least 1).
        warmup: untimed calls first (the first compiles a jitted function); 0 when
            ``fn`` is already compiled.
        clock: the timer (seconds); ``time.perf_counter`` unless testing.

    Returns:
        The fastest timed call in seconds.
    """
    return interleaved({"fn": fn}, repeats, warmup=warmup, clock=clock)["fn"]


@dataclasses.dataclass(frozen=True)
class BumpTiming:
    """Bump-and-revalue against one reverse pass (all best-of-n, interleaved).

    Attributes:
        revaluations: valuations of bump-and-revalue: the base plus one bump per
            scalar input.
        gradient_seconds: one reverse (value-and-gradient) pass.
        value_seconds: one jitted single revaluation.
        seconds_per_revaluation: per bump method (``LOOP`` and ``jitted_vmap_<n>``),
            its best measured time per revaluation.
        method: the cheapest method per revaluation.
        differences: forward finite differences ``(value(x + h e_i) - value(x)) / h``
            shaped like the inputs, when requested; else None.
    """

    revaluations: int
    gradient_seconds: float
    value_seconds: float
    seconds_per_revaluation: Mapping[str, float]
    method: str
    differences: PyTree | None = None

    @property
    def loop_seconds(self) -> float:
        """Every revaluation as a loop of jitted single calls."""
        return self.revaluations * self.seconds_per_revaluation[LOOP]

    @property
    def vmap_seconds(self) -> float:
        """Every revaluation in jitted ``vmap`` chunks (best chunk size; inf if none was timed)."""
        chunked = [s for name, s in self.seconds_per_revaluation.items() if name != LOOP]
        return self.revaluations * min(chunked, default=float("inf"))

    @property
    def bump_seconds(self) -> float:
        """Bump-and-revalue at the cheaper method: ``min(loop_seconds, vmap_seconds)``."""
        return self.revaluations * self.seconds_per_revaluation[self.method]

    @property
    def speedup(self) -> float:
        """Bump-and-revalue time over one reverse pass."""
        return self.bump_seconds / self.gradient_seconds

    @property
    def grad_cost_ratio(self) -> float:
        """One reverse pass over one revaluation."""
        return self.gradient_seconds / self.value_seconds


def bump_and_revalue(
    value: Callable[[PyTree], Any],
    inputs: PyTree,
    *,
    bump: float,
    gradient: Callable[[], Any] | None = None,
    chunks: Sequence[int] = VMAP_CHUNKS,
    repeats: int = 7,
    differences: bool = False,
    rtol: float = 1e-4,
) -> BumpTiming:
    """Time finite-difference bump-and-revalue of ``value`` at ``inputs`` against one reverse pass.

    Bump-and-revalue values the base and each input with one scalar entry bumped by
    ``bump`` (``1 + size(inputs)`` revaluations). Two ways of doing it are timed:
    a Python loop over jitted single revaluations (costed at the best single call)
    and a jitted ``vmap`` over a chunk of bumped inputs for each size in ``chunks``
    (costed at the best chunk time over the chunk size); the cheaper per revaluation
    is ``method``. The reverse pass, the single revaluation and the chunks are timed
    in interleaved best-of-``repeats`` rounds after compilation. Chunked values are
    checked against single revaluations.

    Args:
        value: the revaluation, ``inputs -> scalar``, jit-able and vmap-able; close over
            what is not bumped (paths, policy, other inputs).
        inputs: the pytree of bumped inputs (e.g. a forward curve or key rates).
        bump: the bump added to one scalar entry at a time.
        gradient: the reverse pass to time, a zero-argument callable (e.g. a jitted
            ``value_and_grad`` over every input and the policy); default
            ``jax.value_and_grad(value)`` at ``inputs``, jitted.
        chunks: bumped inputs per ``vmap`` call (each capped at the revaluation count).
        repeats: timed rounds.
        differences: also compute every revaluation (vmapped chunks, untimed) and
            return the forward finite differences.
        rtol: relative tolerance of the chunked-against-single check.

    Returns:
        The ``BumpTiming``.

    Raises:
        ValueError: ``inputs`` has no entries or a chunk size is below 1.
        RuntimeError: vmapped revaluations disagree with single ones.
    """
    flat, unravel = ravel_pytree(inputs)
    n = int(flat.size)
    if n == 0:
        raise ValueError("bump_and_revalue needs at least one input entry")
    if any(c < 1 for c in chunks):
        raise ValueError(f"chunk sizes must be at least 1, got {tuple(chunks)}")
    revaluations = n + 1

    def flat_value(x: jax.Array) -> jax.Array:
        return jnp.asarray(value(unravel(x)))

    def bumped(start: int, stop: int) -> jax.Array:
        """Rows ``start:stop`` of the bumped inputs: row 0 the base, row ``i`` entry ``i - 1`` bumped."""
        rows = jnp.arange(start, stop)[:, None] - 1
        return flat[None, :] + jnp.asarray(bump, flat.dtype) * (rows == jnp.arange(n)[None, :]).astype(
            flat.dtype
        )

    single = jax.jit(flat_value)
    batched = jax.jit(jax.vmap(flat_value))
    if gradient is None:
        grad_fn = jax.jit(jax.value_and_grad(value))
        gradient = partial(grad_fn, inputs)
    calls: dict[str, Callable[[], Any]] = {"gradient": gradient, LOOP: partial(single, flat)}
    sizes = {LOOP: 1}
    for chunk in sorted({min(c, revaluations) for c in chunks}):
        batch = bumped(0, chunk)
        check = batch[: min(chunk, 4)]
        expected = np.array([float(single(row)) for row in check])
        got = np.asarray(batched(batch))[: len(check)]
        if not np.allclose(got, expected, rtol=rtol, atol=1e-6 * abs(expected[0])):
            raise RuntimeError(f"vmapped revaluations {got} disagree with single ones {expected}")
        calls[f"{VMAP_PREFIX}{chunk}"] = partial(batched, batch)
        sizes[f"{VMAP_PREFIX}{chunk}"] = chunk
    best = interleaved(calls, repeats)
    per_revaluation = {name: best[name] / size for name, size in sizes.items()}
    method = min(per_revaluation, key=per_revaluation.__getitem__)
    fd = None
    if differences:
        step = max(sizes.values())
        values = jnp.concatenate(
            [batched(bumped(s, min(s + step, revaluations))) for s in range(0, revaluations, step)]
        )
        fd = unravel((values[1:] - values[0]) / jnp.asarray(bump, values.dtype))
    return BumpTiming(
        revaluations=revaluations,
        gradient_seconds=best["gradient"],
        value_seconds=best[LOOP],
        seconds_per_revaluation=per_revaluation,
        method=method,
        differences=fd,
    )
