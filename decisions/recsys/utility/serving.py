"""Serving the learnt policy beside the ranker: one request's decision, and batched scoring."""

from __future__ import annotations

import time
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from decisions.recsys.utility import qnet


def decider(model: qnet.QModel) -> Callable[[Array, Array], Array]:
    """A compiled ``(contexts (n, d), lam) -> weight-vector indices (n,)`` for the model."""
    return jax.jit(lambda context, lam: qnet.decide(model, context, lam))


def latency_ms(model: qnet.QModel, contexts: np.ndarray, lam: float = 0.5, calls: int = 2000) -> dict[str, float]:
    """Wall time of single-request decisions after compilation, in milliseconds (p50, p99, max).

    Each call decides one request (a different context each time) and waits for its answer.
    """
    decide = decider(model)
    lam_array = jnp.float32(lam)
    rows = [jnp.asarray(contexts[i % len(contexts)][None]) for i in range(calls)]
    decide(rows[0], lam_array).block_until_ready()
    times = np.empty(calls)
    for i, row in enumerate(rows):
        start = time.perf_counter()
        decide(row, lam_array).block_until_ready()
        times[i] = time.perf_counter() - start
    return {"p50": float(np.percentile(times, 50) * 1e3), "p99": float(np.percentile(times, 99) * 1e3),
            "max": float(times.max() * 1e3)}


def throughput(model: qnet.QModel, contexts: np.ndarray, lam: float = 0.5, repeats: int = 3) -> float:
    """Requests decided per second in one batch of ``contexts`` (best of ``repeats`` after compilation)."""
    decide = decider(model)
    batch = jnp.asarray(contexts)
    lam_array = jnp.float32(lam)
    decide(batch, lam_array).block_until_ready()
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        decide(batch, lam_array).block_until_ready()
        best = min(best, time.perf_counter() - start)
    return float(len(contexts) / best)
