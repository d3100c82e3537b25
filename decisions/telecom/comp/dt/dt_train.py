"""Offline training of the (Prompt) Decision Transformer on CoMP trajectories.

``pack`` concatenates one ``Trajectories`` set per task into flat device arrays (fixed shapes, one
compile) with each task's demonstration set; a training sample is a ``K``-step window of one trajectory
with a prompt from another demonstration of the same task. Loss: cross-entropy of every real user's
action; AdamW with warmup and cosine decay. ``use_prompt=False`` trains the plain DT through the same
code. ``make_prompt`` builds an inference prompt; ``params_from_training`` reads a training checkpoint.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct
from jax import Array

from decisions.core.checkpoint import PathLike, load_metadata, load_pytree, save_pytree
from decisions.core.progress import Progress
from decisions.core.pytrees import fits
from decisions.telecom.comp.dt.promptdt import N_FEATURES, PromptDT, PromptDTConfig, Segment, init_params
from decisions.telecom.comp.sim.constants import MAX_CELLS, MAX_USERS

__all__ = [
    "Packed",
    "Trajectories",
    "accuracy",
    "demonstrations",
    "make_prompt",
    "pack",
    "returns_to_go",
    "sample_batch",
    "train_promptdt",
]

_TRAINING_KIND = "decisions.telecom.comp.dt_training/1"
"""Tag of ``train_promptdt``'s training checkpoints (not a model file: ``save_params`` writes those)."""


class Trajectories(NamedTuple):
    """Offline trajectories of one task (any object with these attributes is accepted).

    Attributes:
        obs: ``(N, T, MAX_USERS, N_FEATURES)`` float32 per-user features, padded users zero.
        actions: ``(N, T, MAX_USERS)`` int32 in ``[0, MAX_CELLS]``.
        rewards: ``(N, T)`` float32.
        user_mask: ``(MAX_USERS,)`` bool.
        cell_mask: ``(MAX_CELLS,)`` bool.
    """

    obs: Any
    actions: Any
    rewards: Any
    user_mask: Any
    cell_mask: Any


@struct.dataclass
class Packed:
    """All tasks' trajectories concatenated (``N`` = total trajectories, ``M`` = tasks).

    Attributes:
        obs: ``(N, T, U, F)``; actions: ``(N, T, U)``; rtg: ``(N, T)`` unscaled returns-to-go.
        task_user_mask: ``(M, U)``; task_cell_mask: ``(M, C)``.
        offset, count: ``(M,)`` first trajectory and number of trajectories of each task.
        demos: ``(M, D)`` global indices of each task's best trajectories (best first; a task
            with fewer than ``D`` trajectories repeats its list); n_demos: ``(M,)`` distinct ones.
    """

    obs: Array
    actions: Array
    rtg: Array
    task_user_mask: Array
    task_cell_mask: Array
    offset: Array
    count: Array
    demos: Array
    n_demos: Array


def returns_to_go(rewards: Any) -> np.ndarray:
    """Undiscounted returns-to-go along the last axis: ``rtg[t] = sum_{s >= t} r[s]``."""
    r = np.asarray(rewards, np.float32)
    return np.flip(np.cumsum(np.flip(r, -1), -1), -1).astype(np.float32)


def demonstrations(traj: Any, n: int) -> np.ndarray:
    """Indices of the ``n`` best-return trajectories of ``traj`` (best first)."""
    ret = np.asarray(traj.rewards, np.float64).sum(-1)
    return np.argsort(-ret, kind="stable")[: max(1, min(n, ret.shape[0]))]


def _check(traj: Any, i: int) -> tuple[int, int]:
    obs = np.shape(traj.obs)
    if len(obs) != 4 or obs[2:] != (MAX_USERS, N_FEATURES):
        raise ValueError(f"datasets: task {i} obs must be (N, T, {MAX_USERS}, {N_FEATURES}), got {obs}")
    n, t = obs[:2]
    if np.shape(traj.actions) != (n, t, MAX_USERS):
        raise ValueError(
            f"datasets: task {i} actions must be {(n, t, MAX_USERS)}, got {np.shape(traj.actions)}"
        )
    if np.shape(traj.rewards) != (n, t):
        raise ValueError(f"datasets: task {i} rewards must be {(n, t)}, got {np.shape(traj.rewards)}")
    if np.shape(traj.user_mask) != (MAX_USERS,) or np.shape(traj.cell_mask) != (MAX_CELLS,):
        raise ValueError(f"datasets: task {i} masks must be ({MAX_USERS},) and ({MAX_CELLS},)")
    if n < 1:
        raise ValueError(f"datasets: task {i} has no trajectories")
    return n, t


def pack(datasets: Sequence[Any], n_demos: int) -> Packed:
    """The ``Packed`` arrays of per-task trajectory sets with their demonstration sets (``ValueError``
    starting ``datasets:`` when it is empty or shapes disagree)."""
    if len(datasets) == 0:
        raise ValueError("datasets: need at least one task")
    shapes = [_check(tr, i) for i, tr in enumerate(datasets)]
    if len({t for _, t in shapes}) != 1:
        raise ValueError(f"datasets: all tasks need the same episode length, got {[t for _, t in shapes]}")
    counts = np.asarray([n for n, _ in shapes], np.int32)
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int32)
    demos = np.zeros((len(datasets), n_demos), np.int32)
    n_d = np.zeros((len(datasets),), np.int32)
    for i, tr in enumerate(datasets):
        best = demonstrations(tr, n_demos)
        n_d[i] = len(best)
        demos[i] = offsets[i] + np.resize(best, n_demos)
    return Packed(
        obs=jnp.asarray(np.concatenate([np.asarray(tr.obs, np.float32) for tr in datasets])),
        actions=jnp.asarray(np.concatenate([np.asarray(tr.actions, np.int32) for tr in datasets])),
        rtg=jnp.asarray(np.concatenate([returns_to_go(tr.rewards) for tr in datasets])),
        task_user_mask=jnp.asarray(np.stack([np.asarray(tr.user_mask, bool) for tr in datasets])),
        task_cell_mask=jnp.asarray(np.stack([np.asarray(tr.cell_mask, bool) for tr in datasets])),
        offset=jnp.asarray(offsets),
        count=jnp.asarray(counts),
        demos=jnp.asarray(demos),
        n_demos=jnp.asarray(n_d),
    )


def _segment(data: Packed, traj: Array, idx: Array, rtg_scale: float) -> Segment:
    """Steps ``idx`` (``(L,)``, negative or past the end = padding) of trajectory ``traj``."""
    t_len = data.rtg.shape[1]
    valid = (idx >= 0) & (idx < t_len)
    safe = jnp.clip(idx, 0, t_len - 1)
    return Segment(
        rtg=jnp.where(valid, data.rtg[traj, safe] / rtg_scale, 0.0),
        obs=jnp.where(valid[:, None, None], data.obs[traj, safe], 0.0),
        actions=jnp.where(valid[:, None], data.actions[traj, safe], 0),
        timesteps=jnp.where(valid, safe, 0),
        mask=valid,
    )


def _sample_one(
    data: Packed, key: Array, context_len: int, prompt_len: int, rtg_scale: float
) -> tuple[Segment, Segment, Array, Array]:
    """One (history, prompt, user_mask, cell_mask) sample; see the module docstring."""
    k_task, k_traj, k_end, k_demo, k_start = jax.random.split(key, 5)
    n_tasks = data.offset.shape[0]
    t_len = data.rtg.shape[1]
    task = jax.random.randint(k_task, (), 0, n_tasks)
    count = data.count[task]
    traj = data.offset[task] + jax.random.randint(k_traj, (), 0, count)
    end = jax.random.randint(k_end, (), 1, t_len + 1)  # window = steps [end - K, end)
    history = _segment(data, traj, end - context_len + jnp.arange(context_len), rtg_scale)

    n_demo = data.n_demos[task]
    rank = jax.random.randint(k_demo, (), 0, n_demo)
    demo = data.demos[task, rank]
    # a different trajectory: the next demonstration, or (a single demo) the next trajectory
    other_demo = data.demos[task, (rank + 1) % n_demo]
    other_traj = data.offset[task] + (demo - data.offset[task] + 1) % count
    demo = jnp.where(demo == traj, jnp.where(n_demo > 1, other_demo, other_traj), demo)
    start = jax.random.randint(k_start, (), 0, max(t_len - prompt_len, 0) + 1)
    prompt = _segment(data, demo, start + jnp.arange(prompt_len), rtg_scale)
    return history, prompt, data.task_user_mask[task], data.task_cell_mask[task]


def sample_batch(
    data: Packed, key: Array, batch_size: int, config: PromptDTConfig
) -> tuple[Segment, Segment, Array, Array]:
    """A batch of ``(history, prompt, user_mask, cell_mask)`` with fixed shapes (jit-able)."""
    keys = jax.random.split(key, batch_size)
    return jax.vmap(lambda k: _sample_one(data, k, config.context_len, config.prompt_len, config.rtg_scale))(
        keys
    )


def _label_weights(history: Segment, user_mask: Array, cell_mask: Array) -> Array:
    """``(B, K, U)`` float weights: real step, real user, label a legal action."""
    a = history.actions
    cell_ok = jnp.take_along_axis(
        jnp.concatenate([jnp.ones_like(cell_mask[:, :1]), cell_mask], axis=-1)[:, None, :],
        jnp.clip(a, 0, MAX_CELLS).reshape(a.shape[0], 1, -1),
        axis=-1,
    ).reshape(a.shape)
    ok = history.mask[:, :, None] & user_mask[:, None, :] & cell_ok & (a >= 0) & (a <= MAX_CELLS)
    return ok.astype(jnp.float32)


def accuracy(logits: Array, history: Segment, user_mask: Array, cell_mask: Array) -> Array:
    """Fraction of real (step, user) pairs where the greedy action equals the label."""
    w = _label_weights(history, user_mask, cell_mask)
    hit = (jnp.argmax(logits, -1) == history.actions).astype(jnp.float32)
    return jnp.sum(hit * w) / jnp.maximum(jnp.sum(w), 1.0)


def _loss(
    params: Any, model: PromptDT, batch: tuple[Segment, Segment, Array, Array], key: Array, use_prompt: bool
) -> tuple[Array, Array]:
    history, prompt, umask, cmask = batch
    logits = model.apply(
        params,
        history,
        umask,
        cmask,
        prompt if use_prompt else None,
        deterministic=False,
        rngs={"dropout": key},
    )
    logp = jax.nn.log_softmax(jnp.maximum(logits, -1e9), axis=-1)
    labels = jnp.clip(history.actions, 0, logits.shape[-1] - 1)
    nll = -jnp.take_along_axis(logp, labels[..., None], axis=-1)[..., 0]
    w = _label_weights(history, umask, cmask)
    loss = jnp.sum(nll * w) / jnp.maximum(jnp.sum(w), 1.0)
    return loss, accuracy(logits, history, umask, cmask)


def _optimizer(config: PromptDTConfig, steps: int) -> optax.GradientTransformation:
    warmup = min(config.warmup_steps, max(steps - 1, 0))
    schedule = optax.warmup_cosine_decay_schedule(
        0.0, config.learning_rate, warmup, max(steps, warmup + 1), end_value=0.1 * config.learning_rate
    )
    return optax.chain(
        optax.clip_by_global_norm(config.grad_clip),
        optax.adamw(schedule, weight_decay=config.weight_decay),
    )


@functools.lru_cache(maxsize=8)
def _training_step(
    config: PromptDTConfig, steps: int, batch_size: int, use_prompt: bool
) -> tuple[optax.GradientTransformation, Callable[[Any, Any, Packed, Array], tuple[Any, Any, Array, Array]]]:
    """The optimiser and the jitted gradient step of one training setting.

    Cached, so a training resumed (or repeated) in the same process reuses the compiled step.
    """
    model = PromptDT(config)
    opt = _optimizer(config, steps)

    @jax.jit
    def train_step(params: Any, opt_state: Any, data: Packed, key: Array) -> tuple[Any, Any, Array, Array]:
        k_batch, k_drop = jax.random.split(key)
        batch = sample_batch(data, k_batch, batch_size, config)
        (loss, acc), grads = jax.value_and_grad(_loss, has_aux=True)(params, model, batch, k_drop, use_prompt)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss, acc

    return opt, train_step


def train_promptdt(
    datasets: Sequence[Any],
    config: PromptDTConfig,
    steps: int,
    batch_size: int = 32,
    seed: int = 0,
    progress: Progress | None = None,
    use_prompt: bool = True,
    log_every: int = 50,
    checkpoint: PathLike | None = None,
    initial: Any = None,
) -> tuple[Any, dict[str, Any]]:
    """Train a Prompt-DT (or, with ``use_prompt=False``, a plain DT) on offline trajectories.

    ``datasets`` holds one ``Trajectories``-like set per task (same episode length); ``steps`` gradient
    steps of ``batch_size`` windows; ``progress`` and ``checkpoint`` every ``log_every`` steps. A call
    with an existing ``checkpoint`` of the same training resumes and ends as an uninterrupted run would;
    ``initial`` parameters of the same ``config`` are fine-tuned with a fresh optimiser.

    Returns ``(params, metrics)``: per-step ``loss`` and ``accuracy`` (numpy), ``steps_per_s`` (after
    compilation), ``compile_s`` and ``use_prompt``. ``ValueError`` names a bad argument or a checkpoint
    written by another training.
    """
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps: must be a positive integer, got {steps!r}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size: must be a positive integer, got {batch_size!r}")
    data = pack(datasets, config.n_demos)
    key = jax.random.PRNGKey(seed)
    key, k_init = jax.random.split(key)
    params = _initial_params(config, k_init, initial)
    opt, train_step = _training_step(config, steps, batch_size, use_prompt)
    opt_state = opt.init(params)

    losses, accs = [], []
    identity = json.loads(json.dumps({  # as the checkpoint's JSON metadata holds it (tuples as lists)
        "kind": _TRAINING_KIND, "config": config.to_dict(), "steps": steps, "batch_size": batch_size,
        "seed": seed, "use_prompt": use_prompt, "log_every": log_every,
        **({"fine_tune": True} if initial is not None else {}),
    }))
    state = {"params": params, "opt_state": opt_state, "key": key}
    first = 0
    if checkpoint is not None and Path(checkpoint).exists():
        state, losses, accs, first = _resume_training(Path(checkpoint), state, identity)
    params, opt_state, key = state["params"], state["opt_state"], state["key"]
    t0 = time.perf_counter()
    t_compiled = t0
    task = "promptdt" if use_prompt else "dt"
    for i in range(first, steps):
        key, k = jax.random.split(key)
        params, opt_state, loss, acc = train_step(params, opt_state, data, k)
        losses.append(loss)
        accs.append(acc)
        if i == first:
            jax.block_until_ready(loss)
            t_compiled = time.perf_counter()
        if (i + 1) % log_every == 0 or i + 1 == steps:
            jax.block_until_ready(loss)
            if checkpoint is not None:
                state = {"params": params, "opt_state": opt_state, "key": key}
                _save_training(Path(checkpoint), state, losses, accs, {**identity, "done": i + 1})
            if progress is not None:
                progress(task, i + 1, steps)
    jax.block_until_ready(params)
    t_end = time.perf_counter()
    trained = steps - first
    metrics = {
        "loss": np.asarray(jax.device_get(losses), np.float32),
        "accuracy": np.asarray(jax.device_get(accs), np.float32),
        "steps_per_s": (trained - 1) / (t_end - t_compiled) if trained > 1 else float("nan"),
        "compile_s": t_compiled - t0,
        "use_prompt": use_prompt,
    }
    return params, metrics


def _initial_params(config: PromptDTConfig, key: Array, initial: Any) -> Any:
    """Fresh parameters of ``config``, or ``initial`` cast to their dtypes (``ValueError`` when they do not fit)."""
    params = init_params(config, key)
    if initial is None:
        return params
    if not fits(initial, params, dtypes=False):
        raise ValueError("initial: the parameters do not fit this config")
    return jax.tree_util.tree_map(lambda x, like: jnp.asarray(x, like.dtype), initial, params)


def _save_training(path: Path, state: dict[str, Any], losses: list[Any], accs: list[Any], metadata: dict[str, Any]) -> None:
    """Write ``train_promptdt``'s state and the per-step losses so far (atomic, ``core.checkpoint``)."""
    log = {"loss": np.asarray(jax.device_get(losses), np.float32), "accuracy": np.asarray(jax.device_get(accs), np.float32)}
    save_pytree(path, {**state, "log": log}, metadata=metadata)


def _log_target(done: int) -> dict[str, Any]:
    """The shape of a training checkpoint's per-step log after ``done`` steps (``_save_training``)."""
    return {name: jax.ShapeDtypeStruct((done,), np.float32) for name in ("loss", "accuracy")}


def _resume_training(
    path: Path, state: dict[str, Any], identity: dict[str, Any]
) -> tuple[dict[str, Any], list[Any], list[Any], int]:
    """``(state, losses, accuracies, steps done)`` from a checkpoint of the same training (``ValueError``
    naming what differs otherwise)."""
    meta = load_metadata(path)
    differ = [k for k, v in identity.items() if meta.get(k) != v]
    if differ:
        raise ValueError(f"{path}: not a checkpoint of this training ({', '.join(differ)} differ)")
    done = int(meta["done"])
    restored = load_pytree(path, {**state, "log": _log_target(done)})
    log_values = restored.pop("log")
    return restored, list(np.asarray(log_values["loss"])), list(np.asarray(log_values["accuracy"])), done


def params_from_training(path: PathLike) -> tuple[Any, PromptDTConfig, bool]:
    """``(params, config, use_prompt)`` where a ``train_promptdt`` training stood when it last saved its
    checkpoint (not a model file; ``ValueError`` for another file)."""
    meta = load_metadata(path)
    if meta.get("kind") != _TRAINING_KIND:
        raise ValueError(f"{path}: not a Prompt-DT training checkpoint")
    config = PromptDTConfig.from_dict(meta["config"])
    use_prompt = bool(meta["use_prompt"])
    opt, _ = _training_step(config, int(meta["steps"]), int(meta["batch_size"]), use_prompt)
    params = jax.eval_shape(lambda: init_params(config, jax.random.PRNGKey(0)))
    target = {
        "params": params, "opt_state": jax.eval_shape(opt.init, params), "key": jax.random.PRNGKey(0),
        "log": _log_target(int(meta["done"])),
    }
    return load_pytree(path, target)["params"], config, use_prompt


def make_prompt(traj: Any, config: PromptDTConfig, index: int | None = None, start: int = 0) -> Segment:
    """A ``prompt_len`` ``Segment`` (no batch axis) from demonstration ``index`` (default the best)."""
    if index is None:
        index = int(demonstrations(traj, 1)[0])
    rtg = returns_to_go(np.asarray(traj.rewards)[index])
    t_len = rtg.shape[0]
    idx = start + np.arange(config.prompt_len)
    valid = (idx >= 0) & (idx < t_len)
    safe = np.clip(idx, 0, t_len - 1)
    obs = np.asarray(traj.obs, np.float32)[index, safe]
    acts = np.asarray(traj.actions, np.int32)[index, safe]
    return Segment(
        rtg=jnp.asarray(np.where(valid, rtg[safe] / config.rtg_scale, 0.0), jnp.float32),
        obs=jnp.asarray(np.where(valid[:, None, None], obs, 0.0), jnp.float32),
        actions=jnp.asarray(np.where(valid[:, None], acts, 0), jnp.int32),
        timesteps=jnp.asarray(np.where(valid, safe, 0), jnp.int32),
        mask=jnp.asarray(valid),
    )
