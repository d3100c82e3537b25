"""The real federation: split-federated training rounds under a strategy, on the simulated fleet."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from decisions.telecom.splitfl import env as E
from decisions.telecom.splitfl import fleet as fl
from decisions.telecom.splitfl import server_view as sv
from decisions.telecom.splitfl.model import Params, SplitNet
from decisions.telecom.splitfl.split import ClientData, RoundFn, evaluate, make_round
from decisions.telecom.splitfl.strategies import Strategy

ProgressFn = Callable[[int, int], None]


@dataclass
class Federation:
    """One seed's federated task: the network, the clients' data, the fleet, the workload.

    Attributes:
        net: the network.
        data: the clients' padded training data.
        val: ``(x, y)`` validation data (the reward's loss; not a client's).
        test: ``(x, y)`` held-out test data scoring each round's model (the curves, the time to the target).
        pe: the fleet and reward params (``env.env_params``; its surrogate is not used here).
        optimizer: the clients' and server's optimiser.
        local_steps, batch_size: the round's workload per client.
        seed: seeds the initial model, the minibatches and the fleet's randomness.
        vmap_clients: vmap the clients (``split.make_round``).
        final_test: ``(x, y)`` held-out test data scoring each run's final model (``History.final_test_acc``;
            default: ``test``). A large test set here and a subset in ``test`` keep the rounds cheap.
    """

    net: SplitNet
    data: ClientData
    val: tuple[np.ndarray, np.ndarray]
    test: tuple[np.ndarray, np.ndarray]
    pe: E.SplitEnvParams
    optimizer: optax.GradientTransformation
    local_steps: int
    batch_size: int
    seed: int
    vmap_clients: bool = True
    final_test: tuple[np.ndarray, np.ndarray] | None = None
    _rounds: dict[int, RoundFn] = field(default_factory=dict, repr=False)

    def round_fn(self, split: int) -> RoundFn:
        """The compiled round at ``split`` (split ``L``, the whole network on the client, trains as ``L - 1``:
        the same function, the same update)."""
        split = min(split, self.net.num_layers - 1)
        if split not in self._rounds:
            self._rounds[split] = make_round(
                self.net, split, self.optimizer, self.local_steps, self.batch_size, vmap_clients=self.vmap_clients
            )
        return self._rounds[split]


@dataclass
class LearningCache:
    """Models by participation history (module docstring), for runs of the same ``Federation``.

    ``entries``: ``(params, validation loss, test accuracy)``; ``final_acc``: the accuracy on
    ``Federation.final_test`` of a history's model, scored when a run ends there.
    """

    entries: dict[bytes, tuple[Params, float, float]] = field(default_factory=dict)
    final_acc: dict[bytes, float] = field(default_factory=dict)
    hits: int = 0
    trained: int = 0


@dataclass
class History:
    """A run, round by round (``rounds`` rows; ``*_start`` entries are before round 1).

    Arrays are ``(rounds,)`` or ``(rounds, n)``.
    """

    strategy: str
    test_acc: np.ndarray
    val_loss: np.ndarray
    round_time_s: np.ndarray
    splits: np.ndarray
    participated: np.ndarray
    eligible: np.ndarray
    timed_out: np.ndarray
    refused: np.ndarray
    died: np.ndarray
    energy_j: np.ndarray
    bytes_sent: np.ndarray
    battery_share: np.ndarray
    cpu_share: np.ndarray
    reward: np.ndarray
    test_acc_start: float
    val_loss_start: float
    tier: np.ndarray
    final_test_acc: float
    """The final model's accuracy on ``Federation.final_test`` (the run's reported accuracy)."""

    @property
    def wall_clock_s(self) -> np.ndarray:
        """Cumulative wall-clock time at the end of each round."""
        return np.cumsum(self.round_time_s)

    def rounds_to(self, accuracy: float, window: int = 1) -> int | None:
        """Rounds until the test accuracy first reaches ``accuracy`` (None if never).

        With ``window`` > 1 the accuracy is the trailing mean of the last ``window`` rounds (the first
        ``window - 1`` rounds cannot count), so a single lucky round on a noisy curve does not.
        """
        if window < 1:
            raise ValueError(f"window must be at least 1, got {window}")
        acc = np.convolve(self.test_acc, np.ones(window) / window, mode="valid")
        hit = np.nonzero(acc >= accuracy)[0]
        return int(hit[0]) + window if len(hit) else None

    def time_to(self, accuracy: float, window: int = 1) -> float:
        """Wall-clock seconds until the test accuracy first reaches ``accuracy`` (inf if never; ``window`` as
        for ``rounds_to``)."""
        rounds = self.rounds_to(accuracy, window)
        return float(self.wall_clock_s[rounds - 1]) if rounds is not None else float("inf")


_play_round = jax.jit(fl.play_round)
_observe = jax.jit(sv.observe, static_argnums=5)
_seen_state = jax.jit(sv.seen_state, static_argnums=2)


def _round_keys(seed: int, t: int, clients: int) -> tuple[jax.Array, jax.Array]:
    key = jax.random.fold_in(jax.random.PRNGKey(seed), t)
    fleet_key, train_key = jax.random.split(key)
    return fleet_key, jax.random.split(train_key, clients)


def train_round(
    fed: Federation, params: Params, splits: np.ndarray, participated: np.ndarray, keys: jax.Array
) -> Params:
    """One round of real split training for the participants, each at its split, averaged together.

    ``keys``: one minibatch key per client (``_round_keys``).
    """
    if not participated.any():
        return params
    counts = np.asarray(fed.data.counts, np.float32)
    total = float(counts[participated].sum())
    groups = []
    for split in np.unique(splits[participated]):
        weights = np.where(participated & (splits == split), counts, 0.0).astype(np.float32)
        new, _ = fed.round_fn(int(split))(params, fed.data.x, fed.data.y, fed.data.counts, keys, jnp.asarray(weights))
        groups.append((float(weights.sum()) / total, new))
    if len(groups) == 1:
        return groups[0][1]
    return jax.tree.map(lambda *leaves: sum(w * a for (w, _), a in zip(groups, leaves, strict=True)), *[g for _, g in groups])


def run_federation(
    fed: Federation,
    strategy: Strategy,
    rounds: int,
    *,
    cache: LearningCache | None = None,
    progress: ProgressFn | None = None,
) -> History:
    """The run's ``History``: ``rounds`` rounds of ``fed`` under ``strategy`` (module docstring).

    ``cache`` shares models by participation history with other runs of ``fed``; ``progress(done,
    total)`` is called after each round. The strategy sees the fleet its ``information`` allows
    (``server_view.seen_state``; the server's view kept with ``fed.pe``'s window and alpha).
    """
    cache = LearningCache() if cache is None else cache
    pe, p = fed.pe, fed.pe.fleet
    params = fed.net.init(jax.random.PRNGKey(fed.seed))
    loss0, acc0 = evaluate(fed.net, params, *fed.val)[0], evaluate(fed.net, params, *fed.test)[1]
    state = fl.reset(jax.random.PRNGKey(fed.seed + 7919), p)
    view = sv.initial_view(p, pe.window)
    information = getattr(strategy, "information", "oracle")
    history_key = b""
    rows: dict[str, list[Any]] = {k: [] for k in (
        "test_acc", "val_loss", "round_time_s", "splits", "participated", "eligible", "timed_out", "refused",
        "died", "energy_j", "bytes_sent", "battery_share", "cpu_share", "reward")}
    loss_prev = loss0
    for t in range(rounds):
        splits = np.asarray(strategy.decide(_seen_state(view, state, information), pe, t), np.int32)
        cpu_share = np.asarray(state.cpu_share)
        fleet_key, train_keys = _round_keys(fed.seed, t, p.clients)
        before = state
        state, out = _play_round(fleet_key, state, p, jnp.asarray(splits))
        view = _observe(view, before, out, state, p, pe.alpha)
        part = np.asarray(out.participated)
        history_key += np.packbits(part).tobytes()
        if history_key in cache.entries:
            params, val_loss, acc = cache.entries[history_key]
            cache.hits += 1
        else:
            params = train_round(fed, params, splits, part, train_keys)
            val_loss = evaluate(fed.net, params, *fed.val)[0]
            acc = evaluate(fed.net, params, *fed.test)[1]
            cache.entries[history_key] = (params, val_loss, acc)
            cache.trained += 1
        reward = float(E.round_reward(pe, out, jnp.float32(t), jnp.float32(loss_prev), jnp.float32(val_loss)))
        loss_prev = val_loss
        for name, value in (
            ("test_acc", acc), ("val_loss", val_loss), ("round_time_s", float(out.round_time_s)),
            ("splits", splits), ("participated", part), ("eligible", np.asarray(out.eligible)),
            ("timed_out", np.asarray(out.timed_out)), ("refused", np.asarray(out.refused)),
            ("died", np.asarray(out.died)), ("energy_j", np.asarray(out.energy_j)),
            ("bytes_sent", np.asarray(out.bytes_sent)),
            ("battery_share", np.asarray(state.battery_j / fl.capacity(state, p))), ("cpu_share", cpu_share),
            ("reward", reward),
        ):
            rows[name].append(value)
        if progress is not None:
            progress(t + 1, rounds)
    arrays = {k: np.asarray(v) for k, v in rows.items()}
    return History(strategy=strategy.name, test_acc_start=acc0, val_loss_start=loss0,
                   tier=np.asarray(p.tier), final_test_acc=final_accuracy(fed, params, history_key, cache), **arrays)


def final_accuracy(fed: Federation, params: Params, history_key: bytes, cache: LearningCache) -> float:
    """The accuracy on ``fed.final_test`` of the model ``params`` reached at ``history_key`` (cached).

    Without a ``final_test``, the model's accuracy on ``fed.test`` (as the last round scored it).
    """
    if fed.final_test is None:
        return float(cache.entries[history_key][2])
    if history_key not in cache.final_acc:
        cache.final_acc[history_key] = float(evaluate(fed.net, params, *fed.final_test)[1])
    return cache.final_acc[history_key]
