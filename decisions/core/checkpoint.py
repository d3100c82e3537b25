"""Pytrees to and from disk: msgpack via flax serialization, never pickle.

``save_pytree`` / ``load_pytree`` write a file holding a format tag, JSON metadata and the leaves
keyed by key path; the structure comes back from a ``target`` pytree, and writes are atomic.
``save_trained`` / ``load_trained`` (``read_trained`` for several kinds or versions) are the one
protocol of trained models: a JSON description beside the params under a ``"<name>/<version>"``
kind tag, checked on load with one-line input errors.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import serialization

from decisions.errors import InputError

PyTree = Any
PathLike = str | os.PathLike[str]

# Format tag written into every checkpoint.
FORMAT = "decisions.pytree/1"


def key_fingerprint(key: jax.Array) -> list[int]:
    """A PRNG key (typed or raw) as plain integers, to tell a checkpoint's run by its key."""
    if jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
        key = jax.random.key_data(key)
    return [int(v) for v in np.asarray(key).ravel()]


def _is_prng_key(leaf: Any) -> bool:
    return isinstance(leaf, jax.Array) and jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key)


def _leaf_to_numpy(leaf: Any) -> np.ndarray:
    if _is_prng_key(leaf):
        leaf = jax.random.key_data(leaf)
    return np.asarray(leaf)


def _flatten(tree: PyTree) -> dict[str, np.ndarray]:
    leaves, _ = jax.tree_util.tree_flatten_with_path(tree)
    return {jax.tree_util.keystr(path): _leaf_to_numpy(leaf) for path, leaf in leaves}


def save_pytree(path: PathLike, tree: PyTree, *, metadata: dict[str, Any] | None = None) -> None:
    """Write ``tree`` (typed PRNG keys as key data) and small JSON-able ``metadata`` to ``path``
    atomically, creating its folder.

    Raises:
        ValueError: when ``metadata`` is not JSON-serialisable.
    """
    path = Path(path)
    try:
        meta_json = json.dumps({} if metadata is None else metadata)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{path}: metadata is not JSON-serialisable ({err})") from err
    payload = {"format": FORMAT, "metadata": meta_json, "leaves": _flatten(tree)}
    data = serialization.msgpack_serialize(payload)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _read_payload(path: PathLike) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: checkpoint file not found")
    try:
        payload = serialization.msgpack_restore(path.read_bytes())
    except Exception as err:  # msgpack raises several unrelated types on bad bytes
        raise ValueError(f"{path}: corrupt or unreadable checkpoint ({type(err).__name__}: {err})") from err
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ValueError(f"{path}: not a decisions checkpoint (expected format {FORMAT!r})")
    return payload


def load_metadata(path: PathLike) -> dict[str, Any]:
    """The metadata dict stored by ``save_pytree`` (``{}`` when none was saved).

    Raises:
        FileNotFoundError: the file does not exist.
        ValueError: the file is corrupt or not a checkpoint.
    """
    return json.loads(_read_payload(path)["metadata"])


def _restore_leaf(path: Path, name: str, saved: np.ndarray, like: Any) -> Any:
    expected = _leaf_to_numpy(like) if _is_prng_key(like) else like
    shape = tuple(expected.shape) if hasattr(expected, "shape") else np.shape(expected)
    dtype = np.dtype(expected.dtype) if hasattr(expected, "dtype") else np.result_type(expected)
    if saved.shape != shape or saved.dtype != dtype:
        raise ValueError(
            f"{path}: leaf {name} has shape {saved.shape} dtype {saved.dtype}, "
            f"target expects shape {shape} dtype {dtype}"
        )
    if _is_prng_key(like):
        return jax.random.wrap_key_data(jnp.asarray(saved), impl=jax.random.key_impl(like))
    if isinstance(like, jax.Array | jax.ShapeDtypeStruct):
        return jnp.asarray(saved)
    if isinstance(like, bool | int | float | complex):
        return type(like)(saved.item())
    return saved


def load_pytree(path: PathLike, target: PyTree) -> PyTree:
    """A pytree saved by ``save_pytree``, in the structure, shapes and dtypes of ``target``.

    ``target``'s values are ignored (``ShapeDtypeStruct`` leaves are fine); leaves come back as
    its kind: jax arrays, numpy arrays, typed PRNG keys or Python scalars.

    Raises:
        FileNotFoundError: the file does not exist.
        ValueError: the file is corrupt, or its leaves do not match ``target``.
    """
    path = Path(path)
    return _restore(path, _read_payload(path)["leaves"], target)


def _restore(path: Path, saved: dict[str, Any], target: PyTree) -> PyTree:
    leaves, treedef = jax.tree_util.tree_flatten_with_path(target)
    names = [jax.tree_util.keystr(p) for p, _ in leaves]
    missing = [n for n in names if n not in saved]
    extra = sorted(set(saved) - set(names))
    if missing or extra:
        raise ValueError(
            f"{path}: structure mismatch with target (missing {missing[:3]}, unexpected {extra[:3]})"
        )
    restored = [
        _restore_leaf(path, n, np.asarray(saved[n]), leaf) for n, (_, leaf) in zip(names, leaves, strict=True)
    ]
    return jax.tree_util.tree_unflatten(treedef, restored)


# Metadata key of a trained file's kind tag (next to the description's own keys).
KIND_KEY = "format"


def save_trained(path: PathLike, *, kind: str, description: Mapping[str, Any], params: PyTree) -> None:
    """Save trained parameters with their JSON ``description`` under a ``kind`` tag (what the file
    holds and its format version, e.g. ``"decisions.finance.pension.policy/1"``).

    Raises:
        ValueError: ``description`` uses the key ``"format"`` or is not JSON-serialisable.
    """
    if KIND_KEY in description:
        raise ValueError(f"{path}: the description may not use the reserved key {KIND_KEY!r}")
    save_pytree(path, params, metadata={KIND_KEY: kind, **description})


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split())


class Trained(NamedTuple):
    """A trained file read back: its kind tag, its description and its parameters."""

    kind: str
    description: dict[str, Any]
    params: PyTree


Untagged = Callable[[dict[str, Any]], tuple[str, dict[str, Any]] | None]
"""Reads a layout from before its kind was tagged: ``(kind, description)`` of such metadata, else ``None``."""


def load_trained(
    path: PathLike,
    *,
    kind: str,
    target: Callable[[dict[str, Any]], PyTree],
    field: str = "checkpoint",
    what: str = "",
) -> tuple[dict[str, Any], PyTree]:
    """``(description, params)`` of a file written by ``save_trained``, checking its kind and version.

    ``target(description)`` builds the parameters' structure; ``field`` is the input errors name;
    ``what`` (e.g. ``"a saved actor-critic policy"``) ends a wrong kind's error line.

    Raises:
        FileNotFoundError: the file does not exist.
        InputError: one line naming the path: corrupt, another kind or version, or parameters
            that do not match their description.
    """
    found = read_trained(path, kinds={kind: target}, field=field, what=what)
    return found.description, found.params


def read_trained(
    path: PathLike,
    *,
    kinds: Mapping[str, Callable[[dict[str, Any]], PyTree]],
    field: str = "checkpoint",
    what: str = "",
    untagged: Untagged | None = None,
) -> Trained:
    """A file written by ``save_trained`` of one of ``kinds`` (kind tag -> ``target(description)``
    building its parameters' structure), or of a layout that ``untagged`` reads.

    Raises:
        FileNotFoundError: the file does not exist.
        InputError: as ``load_trained``'s.
    """
    path = Path(path)
    try:
        payload = _read_payload(path)  # its errors name the path
    except ValueError as err:
        raise InputError(field, _one_line(err)) from err
    try:
        meta = json.loads(payload["metadata"])
    except (KeyError, TypeError, ValueError) as err:
        raise InputError(field, f"{path}: corrupt checkpoint metadata ({_one_line(err)})") from err
    meta = meta if isinstance(meta, dict) else {}
    old = untagged(meta) if untagged is not None and KIND_KEY not in meta else None
    found, meta = old if old is not None else (meta.pop(KIND_KEY, None), meta)
    if not isinstance(found, str) or found not in kinds:
        problem = _kind_problem(path, found, list(kinds))
        raise InputError(field, f"{problem} (not {what})" if what else problem)
    try:
        structure = kinds[found](meta)
    except KeyError as err:
        raise InputError(field, f"{path}: the description lacks {err}") from err
    except InputError:
        raise
    except (TypeError, ValueError) as err:
        raise InputError(field, f"{path}: the description does not fit {found!r} ({_one_line(err)})") from err
    try:
        params = _restore(path, payload["leaves"], structure)
    except ValueError as err:  # names the path
        raise InputError(field, _one_line(err)) from err
    except (KeyError, TypeError, AttributeError) as err:
        problem = f"{path}: corrupt checkpoint leaves ({type(err).__name__}: {_one_line(err)})"
        raise InputError(field, problem) from err
    return Trained(found, meta, params)


def _kind_problem(path: Path, found: Any, kinds: list[str]) -> str:
    """Why a file of kind ``found`` is none of ``kinds`` (same name: which versions are read)."""
    expected = " or ".join(repr(k) for k in kinds)
    if found is None:
        return f"{path} records no kind (expected {expected})"
    found_name, _, found_version = str(found).rpartition("/")
    versions = [k.rpartition("/")[2] for k in kinds if found_name and k.rpartition("/")[0] == found_name]
    if versions:
        reads = " or ".join(repr(v) for v in versions)
        return f"{path} has format version {found_version!r}; this version reads {reads} ({expected})"
    return f"{path} holds {found!r}, not {expected}"
