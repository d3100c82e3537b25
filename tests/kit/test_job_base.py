"""``JobBase``: a job's default name given as a class keyword, its tables as ``Section[Model]`` fields and
``SECTIONS`` derived from them (in field order, unless a job lists its own)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from decisions.core.settings import Settings
from decisions.kit.base import JobBase, Section


class Alpha(Settings):
    section = "alpha"

    size: int = 1


class Beta(Settings):
    section = "beta"

    rate: float = 0.5


class ProbeJob(JobBase, name="probe"):
    alpha: Section[Alpha]
    beta: Beta | None = None
    label: str = "plain"


class DerivedJob(ProbeJob):
    gamma: Section[Alpha]


class ListedJob(JobBase, name="listed"):
    SECTIONS = ("alpha",)

    alpha: Section[Alpha]
    beta: Section[Beta]


def test_the_class_keyword_is_the_default_name_under_the_base_limits() -> None:
    assert ProbeJob().name == "probe" and DerivedJob().name == "probe" and JobBase().name == "job"
    assert ProbeJob(name="other").name == "other"
    for bad in ("", "x" * 201):
        with pytest.raises(ValidationError, match="name"):
            ProbeJob(name=bad)


def test_sections_are_the_table_fields_in_order_unless_listed() -> None:
    assert ProbeJob.SECTIONS == ("alpha", "beta")  # ``label`` is not a table; ``Beta | None`` is
    assert DerivedJob.SECTIONS == ("alpha", "beta", "gamma")
    assert ListedJob.SECTIONS == ("alpha",)
    assert JobBase.SECTIONS == ()


def test_a_section_left_out_takes_its_models_defaults_afresh() -> None:
    first, second = ProbeJob(), ProbeJob()
    assert first.alpha == Alpha() and first.beta is None
    assert first.alpha is not second.alpha
    assert ProbeJob(alpha={"size": 3}).alpha.size == 3


def test_every_domain_job_defaults_to_its_name() -> None:
    from decisions.platform.registry import DOMAINS

    names = {domain.name: domain.job_model().name for domain in DOMAINS}
    assert names == {name: name for name in names} | {"gas_storage": "gas-storage"}
