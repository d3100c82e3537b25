"""``NetworkSettings``: the validated description of one network that ``network.make_network`` builds (no JAX).

Frozen, unknown fields refused; a bad value raises pydantic's ``ValidationError`` (a ``ValueError``)
naming the field. Defaults are ``mobile-env`` 2.1's (``MComCore.default_config``).
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from decisions.telecom.comp.sim.constants import MAX_CELLS, MAX_USERS, PATH_LOSS_MODELS, SCHEDULERS

# mobile-env MComCore.default_config() constants.
BS_BANDWIDTH_HZ = 9e6
BS_FREQUENCY_MHZ = 2500.0
BS_TX_DBM = 30.0
BS_HEIGHT_M = 50.0
UE_VELOCITY = 1.5
UE_SNR_THRESHOLD = 2e-8
UE_NOISE_MW = 1e-9
UE_HEIGHT_M = 1.5
EPISODE_LENGTH = 100

Pair = tuple[float, float]


def _model_id(table: dict[str, int], value: str | int, field: str) -> int:
    """The id of a model name (or id) of ``table``; ``ValueError`` naming ``field`` when unknown."""
    if isinstance(value, str):
        if value not in table:
            raise ValueError(f"{field}: unknown {field} {value!r}; choose one of {sorted(table)}")
        return table[value]
    if int(value) not in table.values():
        raise ValueError(f"{field}: unknown {field} id {value!r}; choose one of {sorted(table.values())}")
    return int(value)


def _positive_pair(value: Pair, field: str) -> Pair:
    """``value`` as floats when both are positive and finite, else ``ValueError`` naming ``field``."""
    width, height = (float(v) for v in value)
    if not (math.isfinite(width) and math.isfinite(height) and width > 0 and height > 0):
        raise ValueError(f"{field}: width and height must be positive and finite, got {value!r}")
    return width, height


class NetworkSettings(BaseModel):
    """One network: its cells and users, scheduler, layout, channel and the cell and user constants.

    ``positions`` (``n_cells`` pairs inside ``size``) fixes the stations; without it ``make_network``
    draws them from its key. ``roam_size`` is the area ``[0, w] x [0, h]`` users roam (default ``size``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    n_cells: int = Field(ge=1, le=MAX_CELLS)
    n_users: int = Field(ge=1, le=MAX_USERS)
    scheduler: str | int = "resource_fair"
    positions: tuple[Pair, ...] | None = None
    size: Pair = (200.0, 200.0)
    roam_size: Pair | None = None
    path_loss: str | int = "okumura_hata"
    interference: bool = False
    joint_transmission: bool = False
    quantise_positions: bool = True
    episode_length: int = Field(EPISODE_LENGTH, ge=1)
    bandwidth_hz: float = Field(BS_BANDWIDTH_HZ, gt=0, allow_inf_nan=False)
    frequency_mhz: float = Field(BS_FREQUENCY_MHZ, gt=0, allow_inf_nan=False)
    tx_dbm: float = Field(BS_TX_DBM, allow_inf_nan=False)
    cell_height_m: float = Field(BS_HEIGHT_M, gt=0, allow_inf_nan=False)
    velocity: float = Field(UE_VELOCITY, ge=0, allow_inf_nan=False)
    snr_threshold: float = Field(UE_SNR_THRESHOLD, gt=0, allow_inf_nan=False)
    noise_mw: float = Field(UE_NOISE_MW, gt=0, allow_inf_nan=False)
    user_height_m: float = Field(UE_HEIGHT_M, gt=0, allow_inf_nan=False)

    @field_validator("positions", mode="before")
    @classmethod
    def _positions_as_pairs(cls, value: object) -> object:
        return value.tolist() if hasattr(value, "tolist") else value

    @field_validator("scheduler")
    @classmethod
    def _scheduler(cls, value: str | int) -> str | int:
        _model_id(SCHEDULERS, value, "scheduler")
        return value

    @field_validator("path_loss")
    @classmethod
    def _path_loss(cls, value: str | int) -> str | int:
        _model_id(PATH_LOSS_MODELS, value, "path_loss")
        return value

    @field_validator("size")
    @classmethod
    def _size(cls, value: Pair) -> Pair:
        return _positive_pair(value, "size")

    @field_validator("roam_size")
    @classmethod
    def _roam_size(cls, value: Pair | None) -> Pair | None:
        return None if value is None else _positive_pair(value, "roam_size")

    @model_validator(mode="after")
    def _positions(self) -> NetworkSettings:
        if self.positions is None:
            return self
        if len(self.positions) != self.n_cells:
            raise ValueError(f"positions: expected shape ({self.n_cells}, 2), got {len(self.positions)} positions")
        width, height = self.size
        if not all(math.isfinite(x) and math.isfinite(y) and 0 <= x <= width and 0 <= y <= height
                   for x, y in self.positions):  # fmt: skip
            raise ValueError("positions: stations must lie inside the area [0, width] x [0, height]")
        return self

    @property
    def scheduler_id(self) -> int:
        """The id of ``scheduler`` in ``SCHEDULERS``."""
        return _model_id(SCHEDULERS, self.scheduler, "scheduler")

    @property
    def path_loss_id(self) -> int:
        """The id of ``path_loss`` in ``PATH_LOSS_MODELS``."""
        return _model_id(PATH_LOSS_MODELS, self.path_loss, "path_loss")

    @property
    def roam_area(self) -> Pair:
        """The area users roam: ``roam_size``, else ``size``."""
        return self.size if self.roam_size is None else self.roam_size
