"""How much of each stage a CoMP study runs (``StudyBudget``), on light modules only (no JAX).

The job's spec (``spec``) validates its ``[study]`` table against these defaults and choices
before the study's modules (JAX) load; ``study`` re-exports ``StudyBudget``, ``promptdt`` the
model ``SIZES`` and ``experts`` builds its ``EXPERT_CONFIG`` from ``EXPERT_STEPS``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from decisions.telecom.comp.promptdt import PromptDTConfig

SIZES: dict[str, dict[str, int]] = {
    "small": {"embed_dim": 64, "n_layers": 2, "n_heads": 2},
    "medium": {"embed_dim": 128, "n_layers": 3, "n_heads": 4},
    "large": {"embed_dim": 256, "n_layers": 4, "n_heads": 8},
}
"""Model-size presets of the (Prompt-)DTs for the scaling study (``PromptDTConfig.size(name)``)."""
EXPERT_STEPS = 600_000
"""PPO environment steps of a per-task expert (``experts.EXPERT_CONFIG.total_env_steps``)."""
DEMONSTRATORS = ("best", "expert", "planner")
"""``StudyBudget.demonstrator`` choices."""
CONDITIONINGS = ("return", "advantage")
"""``StudyBudget.conditioning`` choices."""
WARM_STARTS = ("none", "max_snr", "planner")
"""``StudyBudget.warm_start`` choices (``warm_start.WARM_STARTS``)."""


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
    """PPO steps of the multi-task baseline: as many as the 13 training tasks' experts took
    together (13 x 600k), so it is not handicapped by a smaller budget."""
    episodes_per_behaviour: int = 0
    """Offline episodes of each non-expert behaviour policy per training task (0: expert data
    only). Measured: with 20 episodes of each weaker behaviour (noisy expert, max-SNR, top-2,
    random, noisy max-SNR) beside 100 expert ones, the small PromptDT played max-SNR's
    all-ones whatever the target return (c10-u20-max_capacity-s8: return -39.4 for targets
    -45 to -10; expert -31.0): the history of its own first actions reads as a max-SNR
    episode and it keeps copying it. Prompt-DT's own benchmarks use expert data too."""
    expert_episodes: int = 100
    """Offline episodes of the demonstrator per training task."""
    demo_episodes: int = 5
    """Demonstrator episodes of every task (its prompts; an unseen task's only data)."""
    demonstrator: str = "expert"
    """Whose episodes the (Prompt-)DTs learn from and are prompted with: ``"expert"`` (the
    per-task PPO), ``"best"`` (per task, the better of the per-task expert and the multi-task
    PPO on ``select_episodes`` common episodes) or ``"planner"`` (the greedy planner of
    ``planner``, which reads the state; the DTs learn to act like it from the observation).

    Measured with the small PromptDT and the same budget (mean normalised QoE on the training
    tasks, training accuracy in brackets): 0.858 (0.888) on the experts' episodes; 0.800
    (0.871) with ``"best"``, although the multi-task PPO does better on 12 of the 13 training
    tasks (100 common episodes each), as its choices are harder to imitate greedily; 0.617
    (0.846) with ``"planner"``, although the planner scores 1.31, as its choices depend on
    absolute SNRs and scheduler state that the observation does not hold. The large PromptDT
    with ``"planner"`` reached 0.770 (0.883), against 0.961 (0.939) on the experts'. So the
    experts stay the default."""
    select_episodes: int = 64
    """Episodes (common random numbers) on which ``"best"`` compares the two candidates."""
    warm_start: str = "none"
    """What the per-task experts and the multi-task PPO start from: ``"none"`` (PPO from
    scratch, the parity study's), ``"max_snr"`` or ``"planner"``: that demonstrator's actions
    cloned first, then PPO fine-tunes them (``warm_start``; needed on the joint-transmission
    tasks, where PPO from scratch stays near random)."""
    dt_steps: int = 4_000
    """Gradient steps of each (Prompt-)DT (the shipped study's)."""
    conditioning: str = "return"
    """What the (Prompt-)DTs are conditioned on: ``"return"`` (return-to-go, Decision
    Transformer's) or ``"advantage"`` (advantage-to-go: the sum of each later step's reward minus
    max-SNR's reward in the same state and movement, which the simulator computes; a step's
    return is set mostly by where the users happen to be, its advantage by the action)."""
    dagger_rounds: int = 0
    """DAgger rounds after each (Prompt-)DT's training (``dagger``; needs ``demonstrator =
    "planner"``, the labeler): the model plays ``dagger_episodes`` episodes per training task,
    the planner labels every state it visited, and the model is fine-tuned for ``dagger_steps``
    on the data so far."""
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
    """Steps of history the (Prompt-)DTs read (a step's connections are set by its action, so
    a short history suffices; it halves the training cost of the default 20)."""
    dt_learning_rate: float = 3e-4
    """Peak learning rate of the (Prompt-)DTs."""
    user_layers: int = 1
    """Transformer blocks over each step's users in the (Prompt-)DTs (``PromptDTConfig.user_layers``)."""
    user_ids: bool = True
    """Whether the (Prompt-)DTs read each user's slot (``PromptDTConfig.user_ids``)."""
    target_offsets: tuple[float, ...] = (0.0, 10.0, 25.0, 50.0)
    """The ``"conditioning"`` stage's offsets (reward units, per episode) added to the return
    each (Prompt-)DT is conditioned on (the task's best demonstration's): how much asking for
    more return changes what the model does (``conditioning_check``). Measured on the shipped
    study (``decisions run examples/comp_conditioning.toml``): from offset 0 to 50 the mean return
    of PromptDT large over the training tasks goes from -3.51 to -3.58, while the experts and
    max-SNR are 2.0 apart; a return here is set mostly by the users' movement, not the policy."""

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
        from decisions.telecom.comp.promptdt import PromptDTConfig  # the model (JAX) loads only here

        return PromptDTConfig.size(
            size, context_len=self.context_len, learning_rate=self.dt_learning_rate,
            user_layers=self.user_layers, user_ids=self.user_ids,
        )
