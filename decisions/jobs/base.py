"""``JobBase``: the fields every domain job has, and reading a job from a spec.

A domain's job model subclasses ``JobBase``, declares its spec tables in
``SECTIONS`` (``[scenario]``, ``[snapo]``, ...) and its own fields; ``from_spec``
validates a parsed TOML spec into it with one-line errors naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, Field

from decisions.jobs.validate import spec_data, validate_job


def spec_path(path: str | Path, base_dir: str | Path | None) -> Path:
    """A path written in a spec: relative to ``base_dir`` (the spec file's folder) unless absolute.

    Args:
        path: the path as written.
        base_dir: the folder relative paths refer to; None leaves them relative to the working directory.

    Returns:
        The path to open.
    """
    return Path(path) if base_dir is None else Path(base_dir) / path


class JobBase(BaseModel):
    """A validated batch job: name, seed, output folder and its domain's tables.

    Subclasses set a default ``name`` and list their tables in ``SECTIONS``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    SECTIONS: ClassVar[tuple[str, ...]] = ()
    """The spec's tables besides ``[job]`` that this job reads."""

    name: str = Field("job", min_length=1, max_length=200, description="Run label in the store.")
    seed: int = Field(0, ge=0, description="Root random seed of the job.")
    output_dir: str | None = Field(None, description="Where tables and charts go (default: next to the store).")

    def config(self) -> dict[str, Any]:
        """JSON-ready configuration for the run store."""
        return self.model_dump(mode="json")

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any], base_dir: Path | None = None) -> Self:
        """Validate a job spec (``[job]`` plus ``SECTIONS``) into this job.

        Args:
            spec: the parsed TOML tables.
            base_dir: folder that relative paths in the spec refer to (see ``rewrite``).

        Raises:
            InputError: naming the first bad field.
        """
        data = spec_data(spec, cls.SECTIONS)
        cls.rewrite(data, base_dir)
        return validate_job(cls, data, cls.SECTIONS)

    @classmethod
    def rewrite(cls, data: dict[str, Any], base_dir: Path | None) -> None:
        """Domain hook: rewrite the spec data in place before validation (resolve a file path,
        read a CSV into a field). Does nothing by default."""
        del data, base_dir
