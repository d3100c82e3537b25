"""The split-federated learning job spec: its validated model and ``prepare``, with no JAX."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationInfo, field_validator

from decisions.core.settings import NetworkWidths, Settings, refuse_unused
from decisions.core.strict_input import Seed
from decisions.errors import InputError
from decisions.kit.base import JobBase, Section
from decisions.telecom.splitfl.devices import DeviceScenario


class DatasetName(StrEnum):
    """The image sets."""

    DIGITS = "digits"
    """scikit-learn's bundled 8x8 handwritten digits (1,797 images)."""
    FASHION = "fashion"
    """Fashion-MNIST (60,000 + 10,000 images, 28x28) from Debian's ``dataset-fashion-mnist``."""


class Arch(StrEnum):
    """The split networks (``model.ARCHS``)."""

    CNN = "cnn"
    MOBILENET = "mobilenet"


LAYERS = {Arch.CNN: 9, Arch.MOBILENET: 13}
"""Layers of each network (``model.make_net(arch).num_layers``; a test keeps them equal)."""

DEFAULT_ARCH = {DatasetName.DIGITS: Arch.CNN, DatasetName.FASHION: Arch.MOBILENET}
"""The network each dataset's images fit."""


class DataSettings(Settings):
    """The data and its non-IID partition over the clients."""

    section = "data"

    dataset: DatasetName = Field(DatasetName.DIGITS, description="digits | fashion.")
    path: str | None = Field(None, description="Folder of the Fashion-MNIST IDX files (default: Debian's).")
    concentration: float = Field(
        0.5, gt=0.0, le=1000.0, allow_inf_nan=False, description="Dirichlet label-skew concentration (small: skewed)."
    )
    train_samples: int | None = Field(None, ge=100, description="Training images used (default: all).")
    test_samples: int | None = Field(
        None, ge=50, description="Test images scoring each round's model (the curves, the time to the target; default: "
        "all). Each run's final model is scored on the whole test set."
    )
    validation_share: float = Field(
        0.1, gt=0.0, lt=0.5, description="Share of the training images held out for the reward's validation loss."
    )


class TrainingSettings(Settings):
    """The federated training: network, rounds, local workload, seeds and the accuracy target."""

    section = "training"

    arch: Arch | None = Field(None, description="cnn | mobilenet (default: cnn on digits, mobilenet on fashion).")
    rounds: int = Field(100, ge=1, le=2000, description="Federated rounds per run.")
    local_steps: int = Field(5, ge=1, le=200, description="Minibatch steps per client per round.")
    batch_size: int = Field(32, ge=1, le=1024, description="Samples per minibatch.")
    learning_rate: float = Field(0.05, gt=0.0, le=10.0, allow_inf_nan=False, description="SGD step size.")
    momentum: float = Field(
        0.0, ge=0.0, lt=1.0, description="SGD momentum (its state starts afresh each round, like the optimiser's)."
    )
    seeds: list[Seed] = Field([0, 1, 2], min_length=1, max_length=20, description="Seeds (data partition, model, fleet).")
    target_share: float = Field(
        0.95, gt=0.0, le=1.0, description="Target test accuracy as a share of the centralised model's."
    )
    centralised_steps: int | None = Field(
        None, ge=1, description="SGD steps of the centralised reference (default: rounds x local_steps x clients)."
    )

    @field_validator("seeds")
    @classmethod
    def _distinct(cls, seeds: list[int]) -> list[int]:
        if len(set(seeds)) != len(seeds) or min(seeds) < 0:
            raise ValueError(f"must be distinct non-negative integers, got {seeds}")
        return seeds


class Mode(StrEnum):
    """What one decision sets."""

    ROUND = "round"
    """One split for every client of the round."""
    CLIENT = "client"
    """One split per client, clients in turn."""


class Information(StrEnum):
    """What a strategy sees of a round's background load and links (``server_view``)."""

    ORACLE = "oracle"
    """The round's draws, which no server knows before the round (the bound)."""
    LAST = "last"
    """Each client's last measurement."""
    MEAN = "mean"
    """The mean of its last ``study.forecast_window`` measurements."""
    SMOOTHED = "smoothed"
    """Its exponentially smoothed measurements (``study.forecast_alpha`` on the newest)."""


class AgentSettings(Settings):
    """The committee DQN (the core's DQN, M members voting) and its reward."""

    section = "agent"

    modes: list[Mode] = Field([Mode.ROUND, Mode.CLIENT], min_length=1, description="round and/or client.")
    committee: int = Field(3, ge=1, le=15, description="Committee members M (majority vote).")
    decay: float = Field(0.05, ge=0.0, le=10.0, allow_inf_nan=False, description="lambda of exp(-lambda t) on the loss drop.")
    loss_weight: float = Field(1.0, ge=0.0, le=1e4, allow_inf_nan=False, description="Weight of the decayed loss drop.")
    time_weight: float = Field(1.0, ge=0.0, le=1e4, allow_inf_nan=False, description="Weight of round time / deadline.")
    dropout_weight: float = Field(1.0, ge=0.0, le=1e4, allow_inf_nan=False, description="Weight of the missed-client share.")
    energy_weight: float = Field(0.0, ge=0.0, le=1e4, allow_inf_nan=False, description="Weight of energy / battery capacity.")
    env_steps: int = Field(50_000, ge=100, le=10_000_000, description="Simulated decisions each member trains on.")
    hidden: NetworkWidths = Field((64, 64), description="Q-network widths.")
    gamma: float = Field(0.95, ge=0.0, lt=1.0, description="Discount per decision.")
    learning_rate: float = Field(1e-3, gt=0.0, le=1.0, allow_inf_nan=False, description="Adam step size.")
    seed: Seed = Field(0, description="Seed of the agents' training.")
    information: Information = Field(
        Information.ORACLE, description="What the agents see of a round's load and links: oracle (the round's draws, "
        "which no server knows before the round) | last | mean | smoothed (the server's forecasts)."
    )

    @field_validator("modes")
    @classmethod
    def _unique(cls, modes: list[Mode]) -> list[Mode]:
        if len(set(modes)) != len(modes):
            raise ValueError(f"each mode at most once, got {[m.value for m in modes]}")
        return modes


class StudySettings(Settings):
    """Which baselines and ablations run beside the agents."""

    section = "study"

    fixed_splits: list[int] | None = Field(
        None, description="Fixed splits run as baselines (default: every split 1..L, L being plain FedAvg)."
    )
    random: bool = Field(True, description="Run the random-split baseline.")
    greedy: bool = Field(True, description="Run the greedy deadline/battery rule.")
    fastest: bool = Field(True, description="Run the per-client fastest-split rule (the round-time floor that keeps everyone).")
    committees: list[int] = Field([1, 5], max_length=6, description="Committee sizes of the ablation (client mode).")
    decays: list[float] = Field([0.0], max_length=6, description="Loss-drop decays of the ablation (client mode).")
    time_weights: list[float] = Field(
        [], max_length=6, description="Reward weights on round time / deadline of the ablation (client mode)."
    )
    deployable_rules: bool = Field(
        False, description="Run the fastest-split rule on what the server knows: the last report (fastest_last), "
        "the moving mean (fastest_mean) and the smoothed forecast (fastest_smoothed)."
    )
    forecast_window: int = Field(5, ge=1, le=100, description="Measurements in the server's moving mean.")
    forecast_alpha: float = Field(
        0.3, gt=0.0, le=1.0, allow_inf_nan=False, description="Weight of the newest measurement in the smoothed forecast."
    )

    @field_validator("committees", "decays", "time_weights")
    @classmethod
    def _within(cls, values: list[float], info: ValidationInfo) -> list[float]:
        what, low, high = _ABLATION_BOUNDS[info.field_name]
        for v in values:
            if not low <= v <= high:
                raise ValueError(f"each {what} must lie in [{low:g}, {high:g}], got {v}")
        return values


_ABLATION_BOUNDS: dict[str | None, tuple[str, float, float]] = {
    "committees": ("committee size", 1, 15), "decays": ("decay", 0.0, 10.0), "time_weights": ("time weight", 0.0, 1e4),
}
"""What each ablation list holds and its bounds."""


class SplitFLJob(JobBase, name="splitfl"):
    """A validated split-federated learning study."""

    SPEC_PATHS = ("data.path", "devices.fleet_file")

    data: Section[DataSettings]
    training: Section[TrainingSettings]
    devices: Section[DeviceScenario]
    agent: Section[AgentSettings]
    study: Section[StudySettings]

    @classmethod
    def rewrite(cls, data: dict[str, Any], base_dir: Path | None) -> None:
        """Read a ``devices.fleet_file`` into ``devices.tiers`` (``fleet_file.read_fleet``), so every
        strategy runs on the file's fleet as on tiers written in the spec.

        Raises:
            InputError: ``devices.tiers`` given beside the file, or the file's first bad cell.
        """
        del base_dir
        devices = data.get("devices")
        if not isinstance(devices, dict) or not isinstance(devices.get("fleet_file"), str):
            return
        if "tiers" in devices:
            raise InputError("devices.tiers", "give the tiers or a fleet_file, not both")
        from decisions.telecom.splitfl.fleet_file import read_fleet  # pandas: only for a fleet file

        devices["tiers"] = read_fleet(devices["fleet_file"])

    @property
    def arch(self) -> Arch:
        """The network: the one given, or the dataset's."""
        return self.training.arch or DEFAULT_ARCH[self.data.dataset]


JOB_MODEL = SplitFLJob


def prepare(spec: Mapping[str, Any], base_dir: Path | None = None) -> SplitFLJob:
    """Validate a job spec into a ``SplitFLJob``.

    Raises:
        InputError: naming the first bad field: also a network that does not take the dataset's
            images, a ``data.path`` given for digits, Fashion-MNIST files that are missing, more
            training or test images asked for than the dataset has, a fixed split outside ``[1, L]``.
    """
    job = SplitFLJob.from_spec(spec, base_dir)
    if job.arch is not DEFAULT_ARCH[job.data.dataset]:
        raise InputError("training.arch", f"{job.arch.value} does not take the {job.data.dataset.value} images; "
                         f"use {DEFAULT_ARCH[job.data.dataset].value}")
    if job.data.dataset is DatasetName.DIGITS:
        refuse_unused(job.data, ("path",), prefix="data", problem="is used only with dataset = 'fashion'")
    _check_data_sizes(job.data)
    layers = LAYERS[job.arch]
    for split in job.study.fixed_splits or []:
        if not 1 <= split <= layers:
            raise InputError("study.fixed_splits", f"{split} is outside [1, {layers}] for {job.arch.value}")
    return job


def _check_data_sizes(data: DataSettings) -> None:
    """Raise an ``InputError`` when the data files are missing or ``train_samples`` / ``test_samples``
    exceed the dataset's images (read from the files' headers: no images are loaded)."""
    from decisions.telecom.splitfl.data import digits_sizes, fashion_mnist_sizes

    sizes = digits_sizes() if data.dataset is DatasetName.DIGITS else fashion_mnist_sizes(data.path)
    for key, asked, size in zip(("train_samples", "test_samples"), (data.train_samples, data.test_samples), sizes,
                                strict=True):
        if asked is not None and asked > size:
            kind = "training" if key == "train_samples" else "test"
            raise InputError(f"data.{key}", f"{asked} exceeds the {size} {kind} images of {data.dataset.value}")
