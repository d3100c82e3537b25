"""The shared spec-to-job validation: unknown and malformed sections, field names in errors."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict, Field, model_validator

from decisions.errors import InputError
from decisions.kit.validate import spec_data, validate_job


class _Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    steps: int = Field(10, gt=0)


class _Job(BaseModel):
    model_config = ConfigDict(extra="forbid")
    seed: int = Field(0, ge=0)
    snapo: _Settings = Field(default_factory=_Settings)


def test_job_table_is_flattened_without_kind_and_tables_copied() -> None:
    spec = {"job": {"kind": "x", "seed": 3}, "snapo": {"steps": 5}}
    data = spec_data(spec, ("snapo",))
    assert data == {"seed": 3, "snapo": {"steps": 5}}
    data["snapo"]["steps"] = 7
    assert spec["snapo"]["steps"] == 5


def test_unknown_and_malformed_sections_name_the_section() -> None:
    with pytest.raises(InputError, match=r"^bogus: unknown section \(expected job, snapo, sweep\)"):
        spec_data({"bogus": {}}, ("snapo",))
    with pytest.raises(InputError, match=r"^snapo: must be a table"):
        spec_data({"snapo": 3}, ("snapo",))


def test_errors_name_table_fields_and_job_fields() -> None:
    with pytest.raises(InputError, match=r"^snapo\.steps:"):
        validate_job(_Job, {"snapo": {"steps": 0}}, ("snapo",))
    with pytest.raises(InputError, match=r"^job\.seed:"):
        validate_job(_Job, {"seed": -1}, ("snapo",))
    assert validate_job(_Job, {"seed": 2}, ("snapo",)).seed == 2


class _Limits(BaseModel):
    model_config = ConfigDict(extra="forbid")
    low: int = 0
    high: int = 1

    @model_validator(mode="after")
    def _ordered(self) -> _Limits:
        if self.high <= self.low:
            raise ValueError(f"high: must exceed low ({self.low}), got {self.high}")
        return self


class _Ranged(BaseModel):
    model_config = ConfigDict(extra="forbid")
    limits: _Limits = Field(default_factory=_Limits)
    notes: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _few(self) -> _Ranged:
        if len(self.notes) > 1:
            raise ValueError("limits.high: two notes")
        return self


def test_a_check_across_a_tables_fields_names_the_field_its_message_starts_with() -> None:
    with pytest.raises(InputError) as info:
        validate_job(_Ranged, {"limits": {"low": 3, "high": 2}}, ("limits",))
    assert (info.value.field, info.value.problem) == ("limits.high", "must exceed low (3), got 2")
    with pytest.raises(InputError) as info:
        validate_job(_Ranged, {"notes": ["a", "b"]}, ("limits",))
    assert (info.value.field, info.value.problem) == ("limits.high", "two notes")
