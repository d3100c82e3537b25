"""decisions: sequential decision optimisation under uncertainty on JAX."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("decisions")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0+source"

__all__ = ["__version__"]
