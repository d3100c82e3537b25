"""The shared spec-to-job validation: unknown and malformed sections, field names in errors."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict, Field

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
