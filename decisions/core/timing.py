"""Wall-clock timing for the benches: best-of-n, interleaved rounds, compilation excluded.

``best_of`` and ``interleaved`` time callables; ``bump_and_revalue`` times finite-difference
bump-and-revalue against one reverse pass.
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

LOOP = "loop_of_jitted_calls"  # bump method: a loop over jitted single revaluations
VMAP_PREFIX = "jitted_vmap_"  # bump methods: a chunk of bumped inputs per jitted vmap
VMAP_CHUNKS: tuple[int, ...] = (2, 4, 8)  # chunk sizes tried by default


def interleaved(
    fns: Mapping[str, Callable[[], Any]],
    repeats: int,
    *,
    warmup: int = 1,
    clock: Clock = time.perf_counter,
) -> dict[str, float]:
    """``{name: fastest timed call in seconds}`` of zero-argument callables.

    Each is called ``warmup`` times untimed, then ``repeats`` rounds call each once, the
    starting one rotating; JAX results are waited for.

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
    """Best wall seconds of ``fn()`` over ``repeats`` calls, after ``warmup`` untimed calls."""
    return interleaved({"fn": fn}, repeats, warmup=warmup, clock=clock)["fn"]


@dataclasses.dataclass(frozen=True)
class BumpTiming:
    """Bump-and-revalue against one reverse pass (all best-of-n, interleaved).

    Attributes:
        revaluations: the base plus one bump per scalar input.
        seconds_per_revaluation: per bump method (``LOOP``, ``jitted_vmap_<n>``).
        method: the cheapest method per revaluation.
        differences: forward finite differences shaped like the inputs, when requested.
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


def _bumped_rows(flat: jax.Array, bump: float) -> Callable[[int, int], jax.Array]:
    """``rows(start, stop)``: bumped inputs, row 0 the base and row ``i`` entry ``i - 1`` bumped."""
    n = int(flat.size)

    def rows(start: int, stop: int) -> jax.Array:
        index = jnp.arange(start, stop)[:, None] - 1
        return flat[None, :] + jnp.asarray(bump, flat.dtype) * (index == jnp.arange(n)[None, :]).astype(flat.dtype)

    return rows


def _chunked_calls(
    single: Callable[[jax.Array], jax.Array],
    batched: Callable[[jax.Array], jax.Array],
    bumped: Callable[[int, int], jax.Array],
    chunks: Sequence[int],
    revaluations: int,
    rtol: float,
) -> tuple[dict[str, Callable[[], Any]], dict[str, int]]:
    """One timed call and its chunk size per ``vmap`` chunk size, each checked against single calls.

    Raises:
        RuntimeError: vmapped revaluations disagree with single ones.
    """
    calls: dict[str, Callable[[], Any]] = {}
    sizes: dict[str, int] = {}
    for chunk in sorted({min(c, revaluations) for c in chunks}):
        batch = bumped(0, chunk)
        check = batch[: min(chunk, 4)]
        expected = np.array([float(single(row)) for row in check])
        got = np.asarray(batched(batch))[: len(check)]
        if not np.allclose(got, expected, rtol=rtol, atol=1e-6 * abs(expected[0])):
            raise RuntimeError(f"vmapped revaluations {got} disagree with single ones {expected}")
        calls[f"{VMAP_PREFIX}{chunk}"] = partial(batched, batch)
        sizes[f"{VMAP_PREFIX}{chunk}"] = chunk
    return calls, sizes


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

    The base and each input with one scalar entry bumped by ``bump`` are revalued either by
    a loop of jitted single calls or by a jitted ``vmap`` per chunk size in ``chunks``; the
    cheaper per revaluation is ``method``. Chunked values are checked against single ones.

    Args:
        value: ``inputs -> scalar``, jit-able and vmap-able.
        gradient: the reverse pass to time, zero-argument; default the jitted
            ``jax.value_and_grad(value)`` at ``inputs``.
        differences: also return the forward finite differences (untimed).
        rtol: relative tolerance of the chunked-against-single check.

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

    bumped = _bumped_rows(flat, bump)
    single = jax.jit(flat_value)
    batched = jax.jit(jax.vmap(flat_value))
    if gradient is None:
        grad_fn = jax.jit(jax.value_and_grad(value))
        gradient = partial(grad_fn, inputs)
    chunk_calls, chunk_sizes = _chunked_calls(single, batched, bumped, chunks, revaluations, rtol)
    calls: dict[str, Callable[[], Any]] = {"gradient": gradient, LOOP: partial(single, flat), **chunk_calls}
    sizes = {LOOP: 1, **chunk_sizes}
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
