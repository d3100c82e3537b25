"""``JobBase``: the fields every domain job has, and reading a job from a spec."""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from decisions.core.strict_input import Seed, StrictInput
from decisions.errors import InputError
from decisions.kit.validate import spec_data, validate_job


def spec_path(path: str | Path, base_dir: str | Path | None) -> Path:
    """A path written in a spec, relative to ``base_dir`` unless absolute (None: the working directory)."""
    return Path(path) if base_dir is None else Path(base_dir) / path


def popped_path(table: object, key: str, field: str, base_dir: str | Path | None) -> tuple[dict[str, Any], Path | None]:
    """``table`` (a spec's table) without ``key``, and the file ``key`` names as a ``spec_path`` (None:
    the table is not a mapping or has no ``key``, and comes back as it was, as a dict when it is one).

    Raises:
        InputError: on ``field`` when ``key`` holds something other than a path.
    """
    if not isinstance(table, Mapping) or key not in table:
        return (dict(table) if isinstance(table, Mapping) else {}), None
    rest = dict(table)
    path = rest.pop(key)
    if not isinstance(path, str):
        raise InputError(field, "must be the path of a CSV file")
    return rest, spec_path(path, base_dir)


def resolve_spec_paths(data: dict[str, Any], entries: tuple[str, ...], base_dir: Path | None) -> None:
    """Rewrite in place each ``"section.key"`` of ``data`` that holds a string as a ``spec_path``."""
    for entry in entries:
        section, key = entry.split(".")
        table = data.get(section)
        if isinstance(table, dict) and isinstance(table.get(key), str):
            table[key] = str(spec_path(table[key], base_dir))


JobName = Annotated[str, Field(min_length=1, max_length=200, description="Run label in the store.")]
"""The type of a job's ``name`` (a domain gives its default as a class keyword: ``JobBase``)."""

if TYPE_CHECKING:  # to a type checker, ``Section[Model]`` is ``Model``
    _ModelT = TypeVar("_ModelT", bound=BaseModel)
    Section = Annotated[_ModelT, "a spec table"]
else:
    class Section:
        """``Section[Model]``: the type of a job field holding a spec table, ``Model()`` when the spec leaves it out."""

        def __class_getitem__(cls, model: type[BaseModel]) -> Any:
            return Annotated[model, Field(default_factory=model)]


def _is_table(annotation: object) -> bool:
    """Whether a field's type is a settings model, or a union of settings models and None."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
    else:
        members = [annotation]
    return bool(members) and all(isinstance(member, type) and issubclass(member, BaseModel) for member in members)


class JobBase(StrictInput):
    """A validated batch job: name, seed, output folder and the domain tables listed in ``SECTIONS``;
    every field read strictly (``decisions.core.strict_input``).

    A domain's job gives its default name as a class keyword and its tables as fields:
    ``class ChronicJob(JobBase, name="chronic")`` with ``problem: Section[Problem]``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    SECTIONS: ClassVar[tuple[str, ...]] = ()
    """The spec's tables besides ``[job]``: the fields whose type is a settings model (``Section[Model]``,
    or ``Model | None``), in field order (set for each subclass)."""
    SPEC_PATHS: ClassVar[tuple[str, ...]] = ()
    """``"section.key"`` entries holding a file path, read relative to the spec's folder (``spec_path``)."""

    name: JobName = "job"
    seed: Seed = Field(0, description="Root random seed of the job, in [0, 2**32 - 1].")
    output_dir: str | None = Field(None, description="Where tables and charts go (default: next to the store).")

    def __init_subclass__(cls, *, name: str | None = None, **kwargs: Any) -> None:
        """``name``: the default of the subclass's ``name`` field (None: its parent's)."""
        super().__init_subclass__(**kwargs)
        if name is not None:  # as if the class body read ``name: JobName = name`` (pydantic reads fields later)
            cls.__annotations__["name"] = JobName
            cls.name = name

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        """Set the subclass's ``SECTIONS`` from its fields (unless it gives its own)."""
        super().__pydantic_init_subclass__(**kwargs)
        if "SECTIONS" not in cls.__dict__:
            cls.SECTIONS = tuple(name for name, field in cls.model_fields.items() if _is_table(field.annotation))

    def config(self) -> dict[str, Any]:
        """JSON-ready configuration for the run store."""
        return self.model_dump(mode="json")

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any], base_dir: Path | None = None) -> Self:
        """Validate a parsed spec (``[job]`` plus ``SECTIONS``) into this job.

        Raises:
            InputError: naming the first bad field.
        """
        data = spec_data(spec, cls.SECTIONS)
        resolve_spec_paths(data, cls.SPEC_PATHS, base_dir)
        cls.rewrite(data, base_dir)
        return validate_job(cls, data, cls.SECTIONS)

    @classmethod
    def rewrite(cls, data: dict[str, Any], base_dir: Path | None) -> None:
        """Domain hook: rewrite the spec data in place before validation; does nothing by default."""
        del data, base_dir
