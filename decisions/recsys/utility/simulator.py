"""A recommender whose truth is known: requests, candidates, a miscalibrated ranker, the utility layer
and users answering under a position-based model, in JAX.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from decisions.recsys.utility.scenario import Simulator

SEGMENTS = ("new", "casual", "regular", "power")
"""User segments, in the order of the context's one-hot columns."""
SEGMENT_SHARES = (0.3, 0.3, 0.25, 0.15)
CONTEXT_FEATURES = (
    *(f"segment_{s}" for s in SEGMENTS), "tenure", "mobile", "hour_sin", "hour_cos", "activity",
)
"""The context's columns as the agent and the logs see them."""
CONTEXT_DIM = len(CONTEXT_FEATURES)
CONTEXT_FEATURES_CSV = tuple(f"ctx_{name}" for name in CONTEXT_FEATURES)
"""The context's columns as a log CSV names them (``logs.read_logs``)."""
_REFERENCE_REQUESTS = 2048
# The ranker's miscalibration at miscalibration = 1, per segment (new, casual, regular, power), device
# (desktop, mobile) and head (save, hide, buy), on the logit scale: ``log2`` of the slope, the offset and
# the noise's standard deviation (times ``ranker_noise``). It knows new users poorly (flat, noisy save
# head; buy over-predicted), flattens hides on mobile and exaggerates power users' purchases: where it
# errs differs by context, so the best weights do too.
_LOG2_SLOPE = np.asarray([
    [[-1.5, 0.0, 1.0], [-1.5, -1.5, 1.0]],
    [[-0.5, 0.0, 0.0], [-0.5, -1.5, 0.0]],
    [[0.0, 0.5, -0.5], [0.0, -1.0, -0.5]],
    [[0.5, 1.0, 1.5], [0.5, -0.5, 1.5]],
])
_OFFSET = np.asarray([
    [[1.0, 0.0, 1.0], [1.0, -1.2, 1.0]],
    [[0.3, 0.0, 0.2], [0.3, -0.8, 0.2]],
    [[0.0, 0.0, 0.0], [0.0, -0.8, 0.0]],
    [[-0.2, 0.0, 0.8], [-0.2, -0.6, 0.8]],
])
_NOISE = np.asarray([
    [[2.0, 1.0, 1.0], [2.0, 1.5, 1.0]],
    [[1.0, 1.0, 1.0], [1.0, 1.5, 1.0]],
    [[0.5, 0.5, 0.5], [0.5, 1.0, 0.5]],
    [[0.3, 0.5, 0.3], [0.3, 1.0, 0.3]],
])


class World(NamedTuple):
    """The fixed facts of one simulated world (drawn from ``Simulator.world_seed``)."""

    centroid: Array
    """(S, T): each segment's topic preferences."""
    hide_base: Array
    """(S,): each segment's proneness to hide."""
    buy_base: Array
    """(S,): each segment's propensity to buy."""
    buy_drift: Array
    """(S,): how much each segment's propensity to buy moves per unit of drift (the ranker does not see it)."""
    tenure_mean: Array
    """(S,): mean standardised tenure per segment."""
    activity_mean: Array
    """(S,): mean standardised recent activity per segment."""
    slope: Array
    """(S, 2, 3): the ranker's logit slope per segment, device (desktop, mobile) and head."""
    offset: Array
    """(S, 2, 3): its logit offset."""
    noise: Array
    """(S, 2, 3): its logit noise's standard deviation, in units of ``Simulator.ranker_noise``."""
    head_mean: Array
    """(3,): mean of each predicted head on the reference batch (save, hide, revenue)."""
    head_scale: Array
    """(3,): their standard deviations (the utility layer standardises with these)."""


class Requests(NamedTuple):
    """One batch of requests with their candidates: what the ranker and the truth know."""

    context: Array
    """(n, CONTEXT_DIM) the agent's features."""
    segment: Array
    """(n,) segment index."""
    truth: Array
    """(n, I, 3) true probabilities of save, hide, buy per candidate."""
    price: Array
    """(n, I) candidate prices."""
    heads: Array
    """(n, I, 3) the ranker's standardised predictions (save, hide, revenue)."""


class SimBatch(NamedTuple):
    """Requests with one logged response each and exact expected outcomes (see ``simulate``)."""

    context: Array
    """(n, CONTEXT_DIM)."""
    profile: Profile
    """The contexts' raw fields (segment, tenure, ...)."""
    outcomes: Array
    """(n, A, 3) exact expected (success, hides, revenue) under each weight vector with ``exact=True``;
    (n, 1, 3), the logged vector's only, otherwise."""
    action: Array
    """(n,) the logged weight vector's index."""
    propensity: Array
    """(n,) the logger's probability of that action."""
    reward: Array
    """(n, 3) the drawn response to it (success 0/1, hides count, revenue)."""


def examination(sim: Simulator) -> Array:
    """Probability of examining each slate position, ``(1 + p) ** -position_decay``, shape (N,)."""
    return (1.0 + jnp.arange(sim.slate_size, dtype=jnp.float32)) ** -sim.position_decay


def make_world(sim: Simulator) -> World:
    """Draw a world's fixed facts from ``sim.world_seed`` and standardise the ranker's heads."""
    rng = np.random.default_rng(sim.world_seed)
    segments, topics = len(SEGMENTS), sim.topics
    centroid = rng.normal(size=(segments, topics)) / math.sqrt(topics) * 1.4
    m = sim.miscalibration
    slope = 2.0 ** (m * (_LOG2_SLOPE + 0.1 * rng.normal(size=(segments, 2, 3))))
    offset = m * (_OFFSET + 0.1 * rng.normal(size=(segments, 2, 3)))
    noise = 1.0 + m * (_NOISE - 1.0)
    world = World(
        centroid=jnp.asarray(centroid, jnp.float32),
        hide_base=jnp.asarray([0.9, 0.2, -0.2, -0.6], jnp.float32),
        buy_base=jnp.asarray([-0.8, -0.2, 0.3, 0.8], jnp.float32),
        buy_drift=jnp.asarray([1.0, 0.5, -0.5, -1.0], jnp.float32),
        tenure_mean=jnp.asarray([-1.2, -0.2, 0.5, 1.0], jnp.float32),
        activity_mean=jnp.asarray([-0.5, -0.4, 0.3, 1.2], jnp.float32),
        slope=jnp.asarray(slope, jnp.float32),
        offset=jnp.asarray(offset, jnp.float32),
        noise=jnp.asarray(noise, jnp.float32),
        head_mean=jnp.zeros(3, jnp.float32),
        head_scale=jnp.ones(3, jnp.float32),
    )
    raw = draw_requests(jax.random.PRNGKey(sim.world_seed), sim, world, _REFERENCE_REQUESTS, 0.0).heads
    flat = raw.reshape(-1, 3)
    return world._replace(head_mean=flat.mean(axis=0), head_scale=flat.std(axis=0) + 1e-6)


class Profile(NamedTuple):
    """What a request's context says about its user (the agent sees ``context``)."""

    segment: Array
    """(n,) segment index."""
    tenure: Array
    """(n,) standardised tenure."""
    mobile: Array
    """(n,) 1.0 on mobile."""
    hour: Array
    """(n,) hour of day in [0, 24)."""
    activity: Array
    """(n,) standardised recent activity."""

    def context(self) -> Array:
        """The agent's features, (n, CONTEXT_DIM)."""
        angle = 2 * math.pi * self.hour / 24
        numbers = jnp.stack([self.tenure, self.mobile, jnp.sin(angle), jnp.cos(angle), self.activity], axis=-1)
        return jnp.concatenate([jax.nn.one_hot(self.segment, len(SEGMENTS)), numbers], axis=-1)


def draw_profiles(key: Array, world: World, n: int) -> Profile:
    """Draw ``n`` request contexts."""
    keys = jax.random.split(key, 5)
    segment = jax.random.choice(keys[0], len(SEGMENTS), (n,), p=jnp.asarray(SEGMENT_SHARES))
    return Profile(
        segment=segment,
        tenure=world.tenure_mean[segment] + 0.5 * jax.random.normal(keys[1], (n,)),
        mobile=jax.random.bernoulli(keys[2], 0.6, (n,)).astype(jnp.float32),
        hour=jax.random.uniform(keys[3], (n,), maxval=24.0),
        activity=world.activity_mean[segment] + 0.7 * jax.random.normal(keys[4], (n,)),
    )


def draw_requests(key: Array, sim: Simulator, world: World, n: int, day: Array | float) -> Requests:
    """Draw ``n`` requests of day ``day`` with their candidates, truths and ranker predictions."""
    k_profile, k_rest = jax.random.split(key)
    return requests_for(k_rest, sim, world, draw_profiles(k_profile, world, n), day)


def requests_for(key: Array, sim: Simulator, world: World, profile: Profile, day: Array | float) -> Requests:
    """Requests from given contexts: the users' hidden traits, candidates, truths and ranker predictions.

    Drawing again with another key for the same ``profile`` gives another user with the same context
    and another candidate set: the per-context oracle averages over such draws.
    """
    keys = jax.random.split(key, 12)
    n = profile.segment.shape[0]
    segment, tenure, mobile, activity = profile.segment, profile.tenure, profile.mobile, profile.activity
    evening = jnp.sin(2 * math.pi * (profile.hour - 14.0) / 24.0)
    hide_prone = world.hide_base[segment] + 0.6 * mobile - 0.3 * tenure + 0.2 * jax.random.normal(keys[6], (n,))
    buy_prone = world.buy_base[segment] + 0.4 * evening + 0.3 * activity + 0.2 * jax.random.normal(keys[7], (n,))
    # drift the ranker (trained on day 0) has not learnt: users tire of "clickbait" (appeal wins fewer
    # saves and more hides, the more so on mobile), new users buy more and power users less
    drifted = jnp.asarray(day, jnp.float32) * sim.drift_per_day
    prefs = world.centroid[segment] + 0.5 / math.sqrt(sim.topics) * jax.random.normal(keys[5], (n, sim.topics))

    shape = (n, sim.candidates)
    items = jax.random.normal(keys[8], (*shape, sim.topics))
    affinity = jnp.einsum("nt,nit->ni", prefs, items)
    quality, appeal = 0.5 * jax.random.normal(keys[9], (2, *shape))
    log_price = 3.0 + 0.6 * jax.random.normal(keys[10], shape)
    promoted = jax.random.bernoulli(keys[11], 0.2, shape).astype(jnp.float32)

    def logits(fatigue: Array | float, buy_shift: Array | float) -> Array:
        fatigue = jnp.asarray(fatigue)[..., None]
        return jnp.stack(
            [
                -4.0 + 1.2 * affinity + quality + (0.8 - 1.5 * fatigue) * appeal,
                -3.2 + hide_prone[:, None] + (1.2 + 1.5 * fatigue) * appeal - 0.6 * affinity + 0.8 * promoted,
                -4.0 + (buy_prone + buy_shift)[:, None] + 0.6 * affinity + 1.0 * promoted - 0.5 * (log_price - 3.0),
            ],
            axis=-1,
        )

    truth = jax.nn.sigmoid(logits(drifted * (1.0 + mobile), drifted * world.buy_drift[segment]))
    seen = logits(jnp.zeros(n), 0.0)
    price = jnp.exp(log_price)
    device = mobile.astype(jnp.int32)
    noise = sim.ranker_noise * world.noise[segment, device][:, None] * jax.random.normal(keys[4], seen.shape)
    predicted = jax.nn.sigmoid(world.slope[segment, device][:, None] * seen + world.offset[segment, device][:, None]
                               + noise)
    raw = jnp.stack([predicted[..., 0], predicted[..., 1], predicted[..., 2] * price], axis=-1)
    heads = (raw - world.head_mean) / world.head_scale
    context = profile.context()
    return Requests(context=context, segment=segment, truth=truth, price=price, heads=heads)


def slates(heads: Array, weights: Array, slate_size: int) -> Array:
    """Top-``slate_size`` candidates of every request under every weight vector, best first.

    Args:
        heads: (n, I, 3) standardised predictions.
        weights: (A, 3) weight vectors ``(w_save, w_hide, w_revenue)``.
        slate_size: N.

    Returns:
        (n, A, N) candidate indices.
    """
    signed = weights * jnp.asarray([1.0, -1.0, 1.0], weights.dtype)
    scores = sum(heads[:, None, :, h] * signed[None, :, None, h] for h in range(heads.shape[-1]))
    return jax.lax.top_k(scores, slate_size)[1]


def request_slates(heads: Array, weights: Array, slate_size: int) -> Array:
    """Top-``slate_size`` candidates of each request under its own weight vector ((n, 3)): (n, N) indices."""
    signed = weights * jnp.asarray([1.0, -1.0, 1.0], weights.dtype)
    scores = sum(heads[..., h] * signed[:, None, h] for h in range(heads.shape[-1]))
    return jax.lax.top_k(scores, slate_size)[1]


def _shown(requests: Requests, slate: Array) -> tuple[Array, Array]:
    """True probabilities (..., N, 3) and prices (..., N) of the shown items (slate: (n, ..., N))."""
    rows = jnp.arange(slate.shape[0]).reshape((-1,) + (1,) * (slate.ndim - 1))
    return requests.truth[rows, slate], requests.price[rows, slate]


def expected_outcomes(requests: Requests, slate: Array, exam: Array) -> Array:
    """Exact expected (success, hides, revenue) of showing ``slate`` ((n, ..., N) indices): (n, ..., 3)."""
    truth, price = _shown(requests, slate)
    success = 1.0 - jnp.prod(1.0 - exam * truth[..., 0], axis=-1)
    hides = jnp.sum(exam * truth[..., 1], axis=-1)
    revenue = jnp.sum(exam * truth[..., 2] * price, axis=-1)
    return jnp.stack([success, hides, revenue], axis=-1)


def sampled_outcomes(key: Array, requests: Requests, slate: Array, exam: Array) -> Array:
    """One drawn response to ``slate`` ((n, N) indices): (n, 3) success 0/1, hides, revenue."""
    truth, price = _shown(requests, slate)
    looked, saved, hid, bought = jax.random.uniform(key, (4, *slate.shape))
    looked = looked < exam
    save = looked & (saved < truth[..., 0])
    hide = looked & (hid < truth[..., 1])
    buy = looked & (bought < truth[..., 2])
    return jnp.stack(
        [jnp.any(save, axis=-1).astype(jnp.float32), jnp.sum(hide, axis=-1).astype(jnp.float32),
         jnp.sum(jnp.where(buy, price, 0.0), axis=-1)],
        axis=-1,
    )


def simulate(
    key: Array, sim: Simulator, world: World, weights: Array, logger: Array, n: int, day: Array | float = 0.0,
    exact: bool = True, chunk: int = 1024,
) -> SimBatch:
    """Draw ``n`` requests of ``day`` with a logged response each and exact expected outcomes.

    Args:
        key: PRNG key.
        sim: the simulator's settings.
        world: its fixed facts (``make_world``).
        weights: (A, 3) the action set.
        logger: (A,) the logging policy's context-free action probabilities.
        n: requests.
        day: the day (drift).
        exact: give every weight vector's exact outcomes (ranks A slates per request: the costly part);
            otherwise only the logged vector's.
        chunk: requests simulated at once (one compiled program serves every ``n``).

    Returns:
        The batch; ``outcomes`` is exact, ``reward`` drawn.
    """
    day = jnp.float32(day)
    parts = [_simulate_chunk(key, jnp.int32(i), sim, world, weights, logger, day, exact, chunk)
             for i in range(-(-n // chunk))]
    return jax.tree.map(lambda *xs: jnp.concatenate(xs)[:n], *parts)


@functools.partial(jax.jit, static_argnames=("sim", "exact", "chunk"))
def _simulate_chunk(key: Array, index: Array, sim: Simulator, world: World, weights: Array, logger: Array,
                    day: Array, exact: bool, chunk: int) -> SimBatch:
    """``chunk`` requests of ``simulate`` (chunk ``index``'s own keys)."""
    exam = examination(sim)
    k_profile, k_req, k_act, k_resp = jax.random.split(jax.random.fold_in(key, index), 4)
    profile = draw_profiles(k_profile, world, chunk)
    requests = requests_for(k_req, sim, world, profile, day)
    action = jax.random.choice(k_act, weights.shape[0], (chunk,), p=logger)
    if exact:
        every = slates(requests.heads, weights, sim.slate_size)
        outcomes = expected_outcomes(requests, every, exam)
        logged = jnp.take_along_axis(every, action[:, None, None], axis=1)[:, 0]
    else:
        logged = request_slates(requests.heads, weights[action], sim.slate_size)
        outcomes = expected_outcomes(requests, logged, exam)[:, None]
    reward = sampled_outcomes(k_resp, requests, logged, exam)
    return SimBatch(requests.context, profile, outcomes, action, logger[action], reward)


def context_outcomes(
    key: Array, sim: Simulator, world: World, weights: Array, profile: Profile, day: Array | float = 0.0,
    draws: int = 32, chunk: int = 256,
) -> Array:
    """Expected outcomes of every weight vector given only each request's context: (n, A, 3).

    The mean of the exact outcomes over ``draws`` fresh users with the same context and fresh
    candidate sets: what the best context-based policy can know. ``argmax`` over it is the
    per-context oracle (choose with one key, value on the requests' own exact outcomes).
    """
    n = profile.segment.shape[0]
    chunks = -(-n // chunk)
    padded = jax.tree.map(lambda x: jnp.pad(x, (0, chunks * chunk - n), mode="edge"), profile)
    parts = [
        _context_chunk(jax.random.fold_in(key, i), sim, world, weights,
                       jax.tree.map(lambda x, i=i: x[i * chunk:(i + 1) * chunk], padded), jnp.float32(day), draws)
        for i in range(chunks)
    ]
    return jnp.concatenate(parts)[:n]


@functools.partial(jax.jit, static_argnames=("sim", "draws"))
def _context_chunk(key: Array, sim: Simulator, world: World, weights: Array, profile: Profile, day: Array,
                   draws: int) -> Array:
    """``context_outcomes`` of one chunk of contexts."""
    exam = examination(sim)

    def add(total: Array, draw: Array) -> tuple[Array, None]:
        requests = requests_for(jax.random.fold_in(key, draw), sim, world, profile, day)
        return total + expected_outcomes(requests, slates(requests.heads, weights, sim.slate_size), exam), None

    zero = jnp.zeros((profile.segment.shape[0], weights.shape[0], 3), jnp.float32)
    return jax.lax.scan(add, zero, jnp.arange(draws))[0] / draws


def uniform_logger(actions: int) -> np.ndarray:
    """The exploration logger: every weight vector with probability ``1 / A``."""
    return np.full(actions, 1.0 / actions, dtype=np.float32)


def epsilon_logger(actions: int, production: int, epsilon: float) -> np.ndarray:
    """The production logger: its weights with probability ``1 - epsilon``, else a uniform pick."""
    probs = np.full(actions, epsilon / actions, dtype=np.float64)
    probs[production] += 1.0 - epsilon
    return (probs / probs.sum()).astype(np.float32)
