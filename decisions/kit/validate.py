"""Turning a job spec's TOML tables into a domain's validated job model, with one-line errors."""

from __future__ import annotations

import re
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
        InputError: naming the first bad field as written (``snapo.steps``, ``job.seed``); a check
            across a table's fields whose message starts with ``name: `` names ``table.name``.
    """
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = from_validation_error(exc, data=data)
        field, problem = err.field, err.problem
        head = _FIELD_HEAD.match(problem)
        if head and (field == "input" or isinstance(_value_at(data, field), Mapping)):
            # a check across a table's fields names the field its message starts with
            field = head.group(1) if field == "input" else f"{field}.{head.group(1)}"
            problem = problem[head.end():]
        field = field if field.split(".")[0] in set(sections) else f"job.{field}"
        raise InputError(field, problem) from None


_FIELD_HEAD = re.compile(r"^([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*): ")
"""A problem's leading ``field: `` (a dotted name), as checks across fields write it."""


def _value_at(data: Mapping[str, Any], field: str) -> object:
    """The value at a dotted ``field`` of ``data`` (list indexes as numbers), or None."""
    node: object = data
    for part in field.split("."):
        if isinstance(node, Mapping):
            node = node.get(part)
        elif isinstance(node, list | tuple) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node
