"""SplitFed (SFLV1) training of a ``SplitNet`` cut at a split point, in JAX."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import Array

from decisions.errors import InputError
from decisions.telecom.splitfl.model import Params, SplitNet, join_params, make_net, split_params

__all__ = [
    "ClientData",
    "RoundFn",
    "RoundStats",
    "cross_entropy",
    "equivalence_error",
    "equivalence_errors",
    "evaluate",
    "fedavg",
    "full_step",
    "make_round",
    "pad_clients",
    "split_step",
]


def cross_entropy(logits: Array, labels: Array) -> Array:
    """Mean softmax cross-entropy of ``logits (B, C)`` against integer ``labels (B,)``."""
    return jnp.mean(optax.softmax_cross_entropy_with_integer_labels(logits, labels))


def _loss_acc(logits: Array, labels: Array) -> tuple[Array, Array]:
    acc = jnp.mean((jnp.argmax(logits, axis=-1) == labels).astype(jnp.float32))
    return cross_entropy(logits, labels), acc


def split_step(
    net: SplitNet,
    split: int,
    optimizer: optax.GradientTransformation,
    client_params: Params,
    server_params: Params,
    client_state: optax.OptState,
    server_state: optax.OptState,
    x: Array,
    y: Array,
) -> tuple[Params, Params, optax.OptState, optax.OptState, Array, Array]:
    """One split-learning step on a batch.

    Client forward to the cut with ``jax.vjp``; server forward/backward on the rest with the loss,
    giving the server gradient and the cut gradient; the cut gradient pulled back through the
    client; each part updated by ``optimizer`` with its own state.

    Args:
        net: the network.
        split: split point in ``[1, L-1]`` (static).
        optimizer: an optax transformation (the same one for both parts).
        client_params, server_params: ``params[:split]``, ``params[split:]``.
        client_state, server_state: their optimiser states.
        x: images ``(B, H, W, C)``; y: integer labels ``(B,)``.

    Returns:
        ``(client_params, server_params, client_state, server_state, loss, accuracy)``, the loss
        and accuracy those of the batch before the update.
    """
    h, client_pullback = jax.vjp(lambda cp: net.client_apply(cp, x, split), client_params)

    def server_loss(sp: Params, act: Array) -> tuple[Array, Array]:
        return _loss_acc(net.server_apply(sp, act, split), y)

    (loss, acc), (g_server, g_cut) = jax.value_and_grad(server_loss, argnums=(0, 1), has_aux=True)(
        server_params, h
    )
    (g_client,) = client_pullback(g_cut)
    c_up, client_state = optimizer.update(g_client, client_state, client_params)
    s_up, server_state = optimizer.update(g_server, server_state, server_params)
    client_params = optax.apply_updates(client_params, c_up)
    server_params = optax.apply_updates(server_params, s_up)
    return client_params, server_params, client_state, server_state, loss, acc


def full_step(
    net: SplitNet,
    optimizer: optax.GradientTransformation,
    params: Params,
    state: optax.OptState,
    x: Array,
    y: Array,
) -> tuple[Params, optax.OptState, Array]:
    """One ordinary (unsplit) training step; returns ``(params, state, loss)``."""
    loss, grads = jax.value_and_grad(lambda p: cross_entropy(net.apply(p, x), y))(params)
    updates, state = optimizer.update(grads, state, params)
    return optax.apply_updates(params, updates), state, loss


def _max_abs_diff(a: Any, b: Any) -> float:
    diffs = jax.tree_util.tree_leaves(jax.tree_util.tree_map(lambda u, v: jnp.max(jnp.abs(u - v)), a, b))
    return float(max((float(d) for d in diffs), default=0.0))


def equivalence_errors(
    arch: str | SplitNet,
    key: Array,
    batch: tuple[Array, Array],
    optimizer: optax.GradientTransformation | None = None,
) -> dict[int, float]:
    """``{split: max |split-trained - full-trained|}`` (float32) of one split step against one full step.

    Both start from ``make_net(arch).init(key)`` with fresh optimiser states and see ``batch = (x, y)``;
    ``optimizer`` defaults to ``optax.sgd(0.1)`` (any element-wise optimiser gives the same result).
    """
    net = make_net(arch)
    opt = optax.sgd(0.1) if optimizer is None else optimizer
    x, y = jnp.asarray(batch[0], jnp.float32), jnp.asarray(batch[1], jnp.int32)
    params = net.init(key)
    full, _, _ = full_step(net, opt, params, opt.init(params), x, y)
    errors: dict[int, float] = {}
    for s in net.splits:
        cp, sp = split_params(params, s)
        cp2, sp2, *_ = split_step(net, s, opt, cp, sp, opt.init(cp), opt.init(sp), x, y)
        errors[s] = _max_abs_diff(join_params(cp2, sp2), full)
    return errors


def equivalence_error(
    arch: str | SplitNet,
    key: Array,
    batch: tuple[Array, Array],
    optimizer: optax.GradientTransformation | None = None,
) -> float:
    """Max over split points of ``equivalence_errors`` (float32; should be <= 1e-5)."""
    return max(equivalence_errors(arch, key, batch, optimizer).values())


class ClientData(NamedTuple):
    """Client datasets padded to a common length.

    Attributes:
        x: images ``(K, N, H, W, C)`` (padding rows are zeros, never sampled).
        y: labels ``(K, N)`` int32.
        counts: real samples per client ``(K,)`` int32, each >= 1.
    """

    x: Array
    y: Array
    counts: Array


def pad_clients(datasets: Sequence[tuple[Any, Any]]) -> ClientData:
    """Stack per-client ``(x, y)`` datasets, zero-padding each to the longest.

    Raises:
        InputError: (``datasets``) when empty, a client has no samples, or shapes disagree.
    """
    if not datasets:
        raise InputError("datasets", "need at least one client dataset")
    xs = [np.asarray(x, np.float32) for x, _ in datasets]
    ys = [np.asarray(y).astype(np.int32).reshape(-1) for _, y in datasets]
    for i, (x, y) in enumerate(zip(xs, ys, strict=True)):
        if len(x) == 0 or len(x) != len(y):
            raise InputError(
                "datasets", f"client {i} has {len(x)} images and {len(y)} labels (need >= 1, equal)"
            )
        if x.shape[1:] != xs[0].shape[1:]:
            raise InputError(
                "datasets", f"client {i} images have shape {x.shape[1:]}, client 0 {xs[0].shape[1:]}"
            )
    n = max(len(x) for x in xs)
    xp = np.zeros((len(xs), n, *xs[0].shape[1:]), np.float32)
    yp = np.zeros((len(xs), n), np.int32)
    for i, (x, y) in enumerate(zip(xs, ys, strict=True)):
        xp[i, : len(x)] = x
        yp[i, : len(y)] = y
    counts = np.array([len(x) for x in xs], np.int32)
    return ClientData(jnp.asarray(xp), jnp.asarray(yp), jnp.asarray(counts))


def fedavg(stacked: Any, counts: Array) -> Any:
    """Sample-weighted average over the leading (client) axis of every leaf: ``sum_i n_i p_i / sum_i n_i``."""
    w = jnp.asarray(counts, jnp.float32)
    w = w / jnp.sum(w)
    return jax.tree_util.tree_map(lambda a: jnp.tensordot(w, a, axes=1), stacked)


class RoundStats(NamedTuple):
    """Training metrics of one round (on the clients' own minibatches, before each update).

    Attributes:
        loss: sample-weighted mean over clients of each client's mean loss over its local steps.
        accuracy: the same for accuracy.
        client_loss: per-client mean loss ``(K,)``.
        client_accuracy: per-client mean accuracy ``(K,)``.
    """

    loss: Array
    accuracy: Array
    client_loss: Array
    client_accuracy: Array


RoundFn = Callable[..., tuple[Params, RoundStats]]


def _combine(
    params: Params, cps: Params, sps: Params, losses: Array, accs: Array, w: Array
) -> tuple[Params, RoundStats]:
    """FedAvg of the clients' parts with weights ``w`` (``params`` unchanged when they are all zero)."""
    total = jnp.sum(w)
    safe = jnp.where(total > 0, w, 1.0)
    new = join_params(fedavg(cps, safe), fedavg(sps, safe))
    new = jax.tree.map(lambda a, b: jnp.where(total > 0, a, b), new, params)
    share = safe / jnp.sum(safe)
    return new, RoundStats(jnp.sum(share * losses), jnp.sum(share * accs), losses, accs)


def make_round(
    net: SplitNet,
    split: int,
    optimizer: optax.GradientTransformation,
    local_steps: int,
    batch_size: int,
    *,
    vmap_clients: bool = True,
) -> RoundFn:
    """Build the SFLV1 round ``round(params, x, y, counts, keys, weights=None) -> (params, RoundStats)``.

    ``x, y, counts`` are the clients' padded data (``pad_clients``), ``keys`` one PRNG key per client
    (``jax.random.split(key, K)``; equal keys and data give equal client results).
    Each client starts from the global client part and its own copy of the global server part,
    with fresh optimiser states, and takes ``local_steps`` steps on minibatches of ``batch_size``
    drawn with replacement from its ``counts[i]`` samples; then client and server parts are both
    FedAvg-ed with weights ``weights / sum(weights)`` (default ``counts``; a zero weight leaves a
    client out, all zero returns ``params`` unchanged).

    ``vmap_clients=True``: the whole round is one jitted function, clients ``vmap``-ed (one compile
    per number of clients and padded length). ``vmap_clients=False``: the clients with a non-zero
    weight run one after another, each a jitted call with its local steps unrolled, then the average
    (XLA:CPU runs vmapped per-client convolutions as slow grouped convolutions). Results are the
    same either way.

    Raises:
        InputError: (``split``) outside ``[1, L-1]``; (``local_steps``/``batch_size``) below 1.
    """
    split = net.check_split(split)
    if local_steps < 1:
        raise InputError("local_steps", f"must be >= 1, got {local_steps}")
    if batch_size < 1:
        raise InputError("batch_size", f"must be >= 1, got {batch_size}")
    unroll = 1 if vmap_clients else local_steps

    def client_train(
        cp: Params, sp: Params, x: Array, y: Array, n: Array, key: Array
    ) -> tuple[Params, Params, Array, Array]:
        idx = jax.random.randint(key, (local_steps, batch_size), 0, n)

        def body(carry: tuple[Any, ...], ix: Array) -> tuple[tuple[Any, ...], tuple[Array, Array]]:
            c, s, cs, ss = carry
            c, s, cs, ss, loss, acc = split_step(net, split, optimizer, c, s, cs, ss, x[ix], y[ix])
            return (c, s, cs, ss), (loss, acc)

        (cp, sp, _, _), (losses, accs) = jax.lax.scan(
            body, (cp, sp, optimizer.init(cp), optimizer.init(sp)), idx, unroll=unroll
        )
        return cp, sp, jnp.mean(losses), jnp.mean(accs)

    @jax.jit
    def vmapped(params: Params, x: Array, y: Array, counts: Array, keys: Array, w: Array):
        cp, sp = split_params(params, split)
        cps, sps, losses, accs = jax.vmap(client_train, in_axes=(None, None, 0, 0, 0, 0))(
            cp, sp, x, y, counts, keys
        )
        return _combine(params, cps, sps, losses, accs, w)

    one_client = jax.jit(client_train)
    combine_jit = jax.jit(_combine)

    def looped(params: Params, x: Array, y: Array, counts: Array, keys: Array, w: Array):
        cp, sp = split_params(params, split)
        chosen = np.flatnonzero(np.asarray(w) > 0).tolist() or [0]
        outs = [one_client(cp, sp, x[i], y[i], counts[i], keys[i]) for i in chosen]
        stacked = jax.tree.map(lambda *a: jnp.stack(a), *outs)
        w_chosen = jnp.asarray(w)[jnp.asarray(chosen)]
        return combine_jit(params, *stacked, w_chosen)

    def round_fn(params: Params, x: Array, y: Array, counts: Array, keys: Array, weights: Array | None = None):
        w = jnp.asarray(counts if weights is None else weights, jnp.float32)
        return (vmapped if vmap_clients else looped)(params, x, y, counts, keys, w)

    return round_fn


def _eval_chunk(net: SplitNet, params: Params, x: Array, y: Array, mask: Array) -> tuple[Array, Array]:
    logits = net.apply(params, x)
    losses = optax.softmax_cross_entropy_with_integer_labels(logits, y)
    correct = (jnp.argmax(logits, axis=-1) == y).astype(jnp.float32)
    return jnp.sum(losses * mask), jnp.sum(correct * mask)


_eval_chunk_jit = jax.jit(_eval_chunk, static_argnums=0)


def evaluate(net: SplitNet, params: Params, x: Any, y: Any, batch_size: int = 1024) -> tuple[float, float]:
    """``(loss, accuracy)`` as floats: mean cross-entropy and accuracy of the full model on ``(x, y)``.

    Evaluated in chunks of ``batch_size`` (the last padded and masked: one compile).
    """
    x = np.asarray(x, np.float32)
    y = np.asarray(y).astype(np.int32).reshape(-1)
    n = len(y)
    if n == 0 or len(x) != n:
        raise InputError("x", f"need >= 1 images and as many labels, got {len(x)} and {n}")
    b = min(batch_size, n)
    loss_sum, correct = 0.0, 0.0
    for start in range(0, n, b):
        xb, yb = x[start : start + b], y[start : start + b]
        m = len(yb)
        mask = np.zeros(b, np.float32)
        mask[:m] = 1.0
        if m < b:
            xb = np.concatenate([xb, np.zeros((b - m, *x.shape[1:]), np.float32)])
            yb = np.concatenate([yb, np.zeros(b - m, np.int32)])
        ls, cs = _eval_chunk_jit(net, params, jnp.asarray(xb), jnp.asarray(yb), jnp.asarray(mask))
        loss_sum += float(ls)
        correct += float(cs)
    return loss_sum / n, correct / n
