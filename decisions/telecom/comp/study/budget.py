"""How much of each stage a CoMP study runs (``StudyBudget``), on light modules only (no JAX).

The job's spec (``spec``) validates its ``[study]`` table against these defaults and choices
before the study's modules (JAX) load.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from decisions.telecom.comp.dt.sizes import SIZES
from decisions.telecom.comp.policies.presets import EXPERT_STEPS, WARM_STARTS

if TYPE_CHECKING:
    from decisions.telecom.comp.dt.promptdt import PromptDTConfig

DEMONSTRATORS = ("best", "expert", "planner")
"""``StudyBudget.demonstrator`` choices."""
CONDITIONINGS = ("return", "advantage")
"""``StudyBudget.conditioning`` choices."""



def _check_int(name: str, value: Any, minimum: int) -> None:
    """Raise ``ValueError("name: ...")`` unless ``value`` is an integer ``>= minimum``."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ValueError(f"{name}: must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name}: must be >= {minimum}, got {value}")


@dataclass(frozen=True)
class StudyBudget:
    """How much of each stage to run (the defaults are the measured study's)."""

    expert_steps: int = EXPERT_STEPS
    """PPO steps per task expert."""
    multitask_steps: int = 7_800_000
    """PPO steps of the multi-task baseline (as many as the training tasks' experts together)."""
    episodes_per_behaviour: int = 0
    """Offline episodes of each non-expert behaviour policy per training task (0: expert data only)."""
    expert_episodes: int = 100
    """Offline episodes of the demonstrator per training task."""
    demo_episodes: int = 5
    """Demonstrator episodes of every task (its prompts; an unseen task's only data)."""
    demonstrator: str = "expert"
    """Whose episodes the (Prompt-)DTs learn from and are prompted with: ``"expert"`` (the per-task PPO),
    ``"best"`` (the better of it and the multi-task PPO on ``select_episodes`` common episodes) or
    ``"planner"`` (the greedy planner, which reads the state)."""
    select_episodes: int = 64
    """Episodes (common random numbers) on which ``"best"`` compares the two candidates."""
    warm_start: str = "none"
    """What the PPO policies start from: ``"none"`` (from scratch), or ``"max_snr"`` / ``"planner"``
    cloned first, then fine-tuned (``warm_start``)."""
    dt_steps: int = 4_000
    """Gradient steps of each (Prompt-)DT (the shipped study's)."""
    conditioning: str = "return"
    """What the (Prompt-)DTs are conditioned on: ``"return"`` (return-to-go) or ``"advantage"`` (the sum
    of each later step's reward minus max-SNR's in the same state and movement)."""
    dagger_rounds: int = 0
    """DAgger rounds after each (Prompt-)DT's training (``dagger``; needs ``demonstrator = "planner"``)."""
    dagger_episodes: int = 16
    """Labelled episodes per training task and DAgger round."""
    dagger_steps: int = 1_000
    """Fine-tuning gradient steps per DAgger round."""
    dt_batch: int = 32
    """Windows per gradient step."""
    sizes: tuple[str, ...] = tuple(SIZES)
    """PromptDT sizes trained (the plain DT uses the first)."""
    eval_episodes: int = 32
    """Evaluation episodes per policy and task."""
    context_len: int = 10
    """Steps of history the (Prompt-)DTs read."""
    dt_learning_rate: float = 3e-4
    """Peak learning rate of the (Prompt-)DTs."""
    user_layers: int = 1
    """Transformer blocks over each step's users in the (Prompt-)DTs (``PromptDTConfig.user_layers``)."""
    user_ids: bool = True
    """Whether the (Prompt-)DTs read each user's slot (``PromptDTConfig.user_ids``)."""
    target_offsets: tuple[float, ...] = (0.0, 10.0, 25.0, 50.0)
    """The ``"conditioning"`` stage's offsets (reward units per episode) added to the return each
    (Prompt-)DT is conditioned on (``conditioning_check``)."""

    def __post_init__(self) -> None:
        if self.demonstrator not in DEMONSTRATORS:
            raise ValueError(f"demonstrator: must be one of {', '.join(DEMONSTRATORS)}, got {self.demonstrator!r}")
        _check_int("dagger_rounds", self.dagger_rounds, 0)
        _check_int("dagger_episodes", self.dagger_episodes, 1)
        _check_int("dagger_steps", self.dagger_steps, 1)
        if self.dagger_rounds and self.demonstrator != "planner":
            raise ValueError(f"dagger_rounds: DAgger labels with the planner; needs demonstrator 'planner', "
                             f"got {self.demonstrator!r}")
        if self.conditioning not in CONDITIONINGS:
            raise ValueError(f"conditioning: must be one of {', '.join(CONDITIONINGS)}, got {self.conditioning!r}")
        if self.warm_start not in WARM_STARTS:
            raise ValueError(f"warm_start: must be one of {', '.join(WARM_STARTS)}, got {self.warm_start!r}")
        _check_int("select_episodes", self.select_episodes, 2)
        if not self.target_offsets or not all(np.isfinite(o) for o in self.target_offsets):
            raise ValueError(f"target_offsets: need at least one finite offset, got {self.target_offsets!r}")

    def dt_config(self, size: str) -> PromptDTConfig:
        """The architecture and training constants of the (Prompt-)DT of ``size``."""
        from decisions.telecom.comp.dt.promptdt import PromptDTConfig  # the model (JAX) loads only here

        return PromptDTConfig.size(
            size, context_len=self.context_len, learning_rate=self.dt_learning_rate,
            user_layers=self.user_layers, user_ids=self.user_ids,
        )
