"""Turning a job spec's TOML tables into a domain's validated job model, with one-line errors."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from decisions.errors import InputError, from_validation_error

ModelT = TypeVar("ModelT", bound=BaseModel)


def spec_data(spec: Mapping[str, Any], sections: Sequence[str]) -> dict[str, Any]:
    """A new dict: the ``[job]`` keys (without ``kind``) at the top level and a copy of each of ``sections``.

    Raises:
        InputError: an unknown section, or a section that is not a table.
    """
    known = ("job", *sections)
    unknown = set(spec) - set(known)
    if unknown:
        raise InputError(sorted(unknown)[0], f"unknown section (expected {', '.join(known)}, sweep)")
    for section in known:
        if section in spec and not isinstance(spec[section], Mapping):
            raise InputError(section, "must be a table")
    data: dict[str, Any] = {k: v for k, v in spec.get("job", {}).items() if k != "kind"}
    for section in sections:
        if section in spec:
            data[section] = dict(spec[section])
    return data


def validate_job(model: type[ModelT], data: Mapping[str, Any], sections: Sequence[str]) -> ModelT:
    """Validate ``data`` into ``model``.

    Raises:
        InputError: naming the first bad field as written (``snapo.steps``, ``job.seed``).
    """
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = from_validation_error(exc, data=data)
        field = err.field if err.field.split(".")[0] in set(sections) else f"job.{err.field}"
        raise InputError(field, err.problem) from None
