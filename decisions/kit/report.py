"""``TablesReport``: a job's result whose files and reloading both come from its declared fields.

``pd.DataFrame`` fields are saved as ``<field>.csv``; plain fields, metrics and the tables'
column types go to ``report.json``; ``load`` reads them back into an equal report.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

import pandas as pd

REPORT_FILE = "report.json"
"""The file (and artifact name) that describes a saved report."""

_NA_NUMERIC = ["", "NaN", "nan", "NA", "<NA>", "None", "null"]


def save_tables(directory: str | Path, tables: Mapping[str, pd.DataFrame]) -> dict[str, Path]:
    """Write each table as ``<name>.csv`` (no index) into ``directory``; table name -> path written."""
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    for name, frame in tables.items():
        path = folder / f"{name}.csv"
        frame.to_csv(path, index=False)
        written[name] = path
    return written


def trained_file(directory: Path, stem: str, trained: Any, write: Callable[[Path, Any], Any]) -> dict[str, Path]:
    """Write ``trained`` as ``<stem>.msgpack`` with ``write(path, trained)``; ``{stem: path}``, or ``{}`` for None."""
    if trained is None:
        return {}
    path = directory / f"{stem}.msgpack"
    write(path, trained)
    return {stem: path}


def comparison_metrics(comparison: pd.DataFrame) -> dict[str, float]:
    """``value_<method>`` (``mean``) and ``stderr_<method>`` (``stderr``) of each row of a comparison table."""
    metrics: dict[str, float] = {}
    for name in comparison.index:
        metrics[f"value_{name}"] = float(comparison.loc[name, "mean"])
        metrics[f"stderr_{name}"] = float(comparison.loc[name, "stderr"])
    return metrics


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the file-only Agg backend, imported on first use."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, path: Path) -> Path:
    """Write ``fig`` to ``path`` as a PNG (110 dpi), close it and return ``path``."""
    fig.savefig(path, dpi=110)
    pyplot().close(fig)
    return path


def _is_frame(hint: Any) -> bool:
    """Whether a type hint is ``pd.DataFrame`` or ``pd.DataFrame | None``."""
    if hint is pd.DataFrame:
        return True
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return any(arg is pd.DataFrame for arg in typing.get_args(hint))
    return False


_PLAIN = (str, int, float, bool, Path)


def _is_plain(hint: Any) -> bool:
    """Whether a hint is a plain JSON-able type (optionally ``| None``): saved in ``report.json``."""
    if hint in _PLAIN:
        return True
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return bool(args) and all(a in _PLAIN for a in args)
    return False


def _schema(frame: pd.DataFrame) -> dict[str, Any]:
    """Column types and index names of a table, enough to read its CSV back equal."""
    index = [name for name in frame.index.names if name is not None]
    flat = frame.reset_index() if index else frame
    return {"index": index, "dtypes": {str(c): str(t) for c, t in flat.dtypes.items()}}


def _read_table(path: Path, schema: Mapping[str, Any] | None) -> pd.DataFrame:
    """Read a table written by ``save`` and restore its column types and index."""
    if schema is None:
        return pd.read_csv(path)
    dtypes: dict[str, str] = dict(schema["dtypes"])
    if not dtypes:
        return pd.DataFrame()
    text = [c for c, t in dtypes.items() if t in ("object", "string", "str")]
    frame = pd.read_csv(
        path,
        keep_default_na=False,
        na_values={c: _NA_NUMERIC for c in dtypes if c not in text},
        dtype={c: str for c in text},
    )
    for column, dtype in dtypes.items():
        if column not in frame:
            continue
        if dtype.startswith("datetime64"):
            frame[column] = pd.to_datetime(frame[column]).astype(dtype)
        elif dtype == "bool":
            frame[column] = frame[column].astype(str).str.lower().eq("true")
        elif dtype == "object":
            frame[column] = frame[column].astype(object)
        else:
            frame[column] = frame[column].astype(dtype)
    if schema["index"]:
        frame = frame.set_index(schema["index"])
    return frame


@dataclass(kw_only=True)
class TablesReport:
    """Base of every domain report: tables, plain fields and ``metrics`` (headline floats) saved and loaded alike."""

    metrics: dict[str, float] = field(default_factory=dict)

    @classmethod
    def _hints(cls) -> dict[str, Any]:
        return typing.get_type_hints(cls)

    @classmethod
    def table_fields(cls) -> tuple[str, ...]:
        """Names of the report's table (``pd.DataFrame``) fields, in declaration order."""
        hints = cls._hints()
        return tuple(f.name for f in dataclasses.fields(cls) if _is_frame(hints[f.name]))

    @classmethod
    def plain_fields(cls) -> tuple[str, ...]:
        """Names of the plain fields (text, numbers, flags, paths) saved in ``report.json``."""
        hints = cls._hints()
        return tuple(f.name for f in dataclasses.fields(cls) if _is_plain(hints[f.name]))

    @classmethod
    def of_study(cls, study: Any, **fields: Any) -> Self:
        """The report of a study (a dataclass with a ``metrics()`` method): the value of each field the
        study and the report both declare (by name), ``metrics=study.metrics()``, then ``fields`` (the
        report's own values, which win)."""
        shared = {f.name for f in dataclasses.fields(study)} & {f.name for f in dataclasses.fields(cls) if f.init}
        values = {name: getattr(study, name) for name in shared if name != "metrics"}
        return cls(**{**values, "metrics": study.metrics(), **fields})

    def tables(self) -> dict[str, pd.DataFrame]:
        """The report's tables by file stem (absent optional tables left out)."""
        return {name: getattr(self, name) for name in self.table_fields() if getattr(self, name) is not None}

    def save_files(self, directory: Path) -> dict[str, Path]:
        """Domain hook: write charts, trained policies and other files; return name -> path."""
        del directory
        return {}

    def save(self, directory: str | Path) -> dict[str, Path]:
        """Write every table as CSV, ``report.json`` and ``save_files`` into ``directory``; name -> path."""
        folder = Path(directory)
        tables = self.tables()
        schemas = {name: _schema(frame) for name, frame in tables.items()}
        written = save_tables(folder, {name: frame.reset_index() if schemas[name]["index"] else frame
                                       for name, frame in tables.items()})
        plain = {}
        for name in self.plain_fields():
            value = getattr(self, name)
            plain[name] = str(value) if isinstance(value, Path) else value
        description = {
            "report": type(self).__name__,
            "metrics": {k: float(v) for k, v in self.metrics.items()},
            "fields": plain,
            "tables": schemas,
        }
        path = folder / REPORT_FILE
        path.write_text(json.dumps(description, indent=1, allow_nan=True))
        written["report"] = path
        written.update(self.save_files(folder))
        return written

    @classmethod
    def load(cls, folder: str | Path) -> Self:
        """Read back the report ``save`` wrote into ``folder``; unsaved fields take their defaults.

        Raises:
            FileNotFoundError: no report in that folder, or one of its tables is missing.
            ValueError: the folder holds another kind of report.
        """
        folder = Path(folder)
        path = folder / REPORT_FILE
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no saved report")
        description = json.loads(path.read_text())
        if description.get("report") != cls.__name__:
            raise ValueError(f"{path}: a {description.get('report')!r}, not a {cls.__name__}")
        hints = cls._hints()
        values: dict[str, Any] = {"metrics": dict(description["metrics"])}
        for name, value in description["fields"].items():
            if name in hints:
                values[name] = Path(value) if value is not None and Path in _hint_args(hints[name]) else value
        for name, schema in description["tables"].items():
            table = folder / f"{name}.csv"
            if not table.is_file():
                raise FileNotFoundError(f"{table}: table {name!r} of the report is missing")
            values[name] = _read_table(table, schema)
        return cls(**values)


def _hint_args(hint: Any) -> tuple[Any, ...]:
    """The members of a union hint, or the hint itself."""
    args = typing.get_args(hint)
    return args if args else (hint,)
