"""A (Prompt-)DT on disk: its model file (``save_params`` / ``load_params``) and ``SavedDT``, the
model read back with what it is conditioned on, its greedy episodes and scores on a task.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from decisions.core.checkpoint import PathLike, read_trained, save_trained
from decisions.telecom.comp.dt.datasets import OfflineDataset
from decisions.telecom.comp.dt.dt_policy import make_dt_policy
from decisions.telecom.comp.dt.dt_train import demonstrations, make_prompt
from decisions.telecom.comp.dt.promptdt import PromptDTConfig, init_params
from decisions.telecom.comp.policies.heuristics import SERVING_SET_POLICIES
from decisions.telecom.comp.policies.rollouts import task_policy
from decisions.telecom.comp.sim.catalog import Task
from decisions.telecom.comp.sim.qoe import rate_figures

__all__ = [
    "ADVANTAGE_BASELINE",
    "ADVANTAGE_BASELINE_POLICY",
    "WEIGHT_DTYPES",
    "SavedDT",
    "dt_scores",
    "load_params",
    "read_model",
    "save_params",
]

MODEL_KIND = "decisions.telecom.comp.promptdt/2"
"""Kind tag (name and format version) of the model files ``save_params`` writes."""

MODEL_KIND_V1 = "decisions.telecom.comp.promptdt/1"
"""Version 1 of the model files: the same description, tagged ``{"kind": V1_TAG}`` instead of a kind tag."""

V1_TAG = "decisions.telecom.comp.promptdt"
"""The ``kind`` metadata of a version 1 model file (a file format id: never changes with the code's layout)."""

WEIGHT_DTYPES = ("float32", "float16")
"""How ``save_params`` may store the weights (``load_params`` always returns float32)."""


def save_params(
    path: PathLike, params: Any, config: PromptDTConfig, *, weights_dtype: str = "float32", **extra: Any
) -> None:
    """Save parameters (a ``MODEL_KIND`` trained file) described by the config, the weights' dtype and ``extra``.

    ``weights_dtype="float16"`` halves the file (the shipped large model stays under the
    repository's 10 MB per file); ``load_params`` casts the weights back to float32.
    """
    if weights_dtype not in WEIGHT_DTYPES:
        raise ValueError(f"weights_dtype: must be one of {list(WEIGHT_DTYPES)}, got {weights_dtype!r}")
    stored = jax.tree_util.tree_map(lambda x: jnp.asarray(x, weights_dtype), params)
    description = {"config": config.to_dict(), "weights_dtype": weights_dtype, **extra}
    save_trained(path, kind=MODEL_KIND, description=description, params=stored)


def _version_1(meta: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """``(MODEL_KIND_V1, description)`` of a version 1 model file's metadata (else ``None``)."""
    if meta.get("kind") != V1_TAG:
        return None
    return MODEL_KIND_V1, {k: v for k, v in meta.items() if k != "kind"}


def _stored_params(description: dict[str, Any]) -> Any:
    """The structure of a model file's weights: the described config's, in the stored dtype."""
    dtype = description.get("weights_dtype", "float32")
    if dtype not in WEIGHT_DTYPES:
        raise ValueError(f"unknown weights_dtype {dtype!r}")
    config = PromptDTConfig.from_dict(description["config"])
    target = jax.eval_shape(lambda: init_params(config, jax.random.PRNGKey(0)))
    return jax.tree_util.tree_map(lambda x: jax.ShapeDtypeStruct(x.shape, dtype), target)


def read_model(path: PathLike, *, field: str = "model") -> tuple[Any, PromptDTConfig, dict[str, Any]]:
    """``(params, config, description)`` of a model file of either version (float32 weights).

    Raises:
        FileNotFoundError: no such file.
        InputError: (``field``, a ``ValueError``) not a Prompt-DT model file, or a structure mismatch.
    """
    kinds = {MODEL_KIND: _stored_params, MODEL_KIND_V1: _stored_params}
    found = read_trained(path, kinds=kinds, field=field, what="a Prompt-DT checkpoint", untagged=_version_1)
    params = jax.tree_util.tree_map(lambda x: jnp.asarray(x, jnp.float32), found.params)
    return params, PromptDTConfig.from_dict(found.description["config"]), found.description


def load_params(path: PathLike) -> tuple[Any, PromptDTConfig]:
    """Load ``(params, config)`` written by ``save_params`` (float32 weights).

    Raises:
        FileNotFoundError: no such file.
        InputError: (a ``ValueError``) not a Prompt-DT checkpoint, or a structure mismatch.
    """
    params, config, _ = read_model(path)
    return params, config


@partial(jax.jit, static_argnames=("config", "use_prompt", "baseline", "labeler"))
def _dt_episodes(
    params: Any, prompt: Any, target: Array, keys: Array, net: Any, config: PromptDTConfig, use_prompt: bool,
    baseline: Any = None, labeler: Any = None,
) -> Any:
    """Greedy (Prompt-)DT episodes, vmapped over keys; one compile per architecture, any task."""
    rollout = make_dt_policy(params, config, prompt if use_prompt else None, target, baseline=baseline, labeler=labeler)
    return jax.vmap(rollout, in_axes=(0, None))(keys, net)


ADVANTAGE_BASELINE_POLICY = task_policy(SERVING_SET_POLICIES["max_snr"])
"""The baseline of advantage conditioning (``StudyBudget.conditioning``): max-SNR, as a ``TaskPolicy``
(for ``generate_dataset``'s ``baseline``)."""
ADVANTAGE_BASELINE = ADVANTAGE_BASELINE_POLICY.fn
"""Its function (for ``make_dt_policy``'s ``baseline``)."""


@dataclass(frozen=True)
class SavedDT:
    """A (Prompt-)DT read from a study folder: weights, architecture, whether it reads a prompt and
    what it is conditioned on (``"return"`` or ``"advantage"``, ``StudyBudget.conditioning``)."""

    params: Any
    config: PromptDTConfig
    use_prompt: bool
    conditioned_on: str = "return"

    @classmethod
    def load(cls, path: Path) -> SavedDT:
        """Read a model written by ``stages.train_dt_models``."""
        params, config, description = read_model(path)
        use_prompt = bool(description.get("use_prompt", True))
        return cls(params, config, use_prompt, str(description.get("conditioning", "return")))

    @property
    def baseline(self) -> Any:
        """The baseline policy function of an advantage-conditioned model (None for return)."""
        return ADVANTAGE_BASELINE if self.conditioned_on == "advantage" else None

    def conditioning(self, demos: OfflineDataset) -> tuple[Any, Array]:
        """``(prompt, target)``: the task's best demonstration (by return) and its return, or for an
        advantage-conditioned model its advantage over the baseline (and a prompt in those units)."""
        best = int(demonstrations(demos, 1)[0])
        view = demos.advantage_view() if self.conditioned_on == "advantage" else demos
        return make_prompt(view, self.config, index=best), jnp.asarray(view.returns()[best], jnp.float32)

    def episodes(
        self, task: Task, demos: OfflineDataset, keys: Array, offset: float = 0.0, labeler: Any = None
    ) -> Any:
        """Greedy episodes on ``task`` (a ``DTRollout`` with a leading key axis), conditioned on
        the best demonstration's return (or advantage) plus ``offset``; with ``labeler`` (a
        ``TaskPolicy`` function) also its action in every visited state (``make_dt_policy``)."""
        prompt, target = self.conditioning(demos)
        return _dt_episodes(self.params, prompt, target + offset, keys, task.params(), self.config, self.use_prompt,
                            self.baseline, labeler)  # fmt: skip


def dt_scores(model: SavedDT, task: Task, demos: OfflineDataset, keys: Array, offset: float = 0.0) -> dict[str, float]:
    """QoE, fairness and return of a (Prompt-)DT on ``task`` conditioned on ``demos`` (their best
    return plus ``offset``)."""
    out = model.episodes(task, demos, keys, offset)
    rewards = np.asarray(out.rewards, np.float64)
    return {
        "return_mean": float(rewards.sum(axis=1).mean()),
        "qoe": float(((rewards + 1.0) / 2.0).mean()),
        "jain_qoe": float(np.asarray(out.jain_qoe).mean()),
        **rate_figures(np.asarray(out.user_rate), np.asarray(task.params().user_mask)),
    }
