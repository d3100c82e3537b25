"""Where a domain finds the data shipped beside the code (trained models, stored studies).

One lookup, ``shipped_data``: the folder named by the environment variable ``DECISIONS_DATA`` when it
is set, else the ``data/`` folder at the root of the source checkout.
"""

from __future__ import annotations

import os
from pathlib import Path

DATA_ENV = "DECISIONS_DATA"
"""The environment variable naming the shipped-data folder (overrides the checkout's ``data/``)."""


def data_root() -> Path:
    """The shipped-data folder: ``$DECISIONS_DATA`` when set, else the checkout's ``data/`` (may not exist)."""
    override = os.environ.get(DATA_ENV)
    return Path(override).expanduser() if override else Path(__file__).resolve().parents[2] / "data"


def shipped_data(*parts: str) -> Path:
    """The path ``parts`` under the shipped-data folder (``data_root``).

    Raises:
        FileNotFoundError: the path does not exist; the message names it and ``DECISIONS_DATA``.
    """
    path = data_root().joinpath(*parts)
    if not path.exists():
        raise FileNotFoundError(
            f"shipped data not found: {path} (set {DATA_ENV} to the folder holding the shipped data, "
            "or run from a source checkout with its data/ folder)"
        )
    return path


def is_shipped(path: Path) -> bool:
    """Whether ``path`` lies inside the shipped-data folder (``data_root``): shipped data are read-only inputs."""
    root = data_root().resolve()
    resolved = Path(path).resolve()
    return resolved == root or root in resolved.parents
