"""Tests for decisions.core.checkpoint: exact round trips, atomic writes, clear errors."""

from __future__ import annotations

import os
from pathlib import Path

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import serialization

from decisions.core import checkpoint
from decisions.core.checkpoint import load_metadata, load_pytree, load_trained, save_pytree, save_trained
from decisions.errors import InputError


class _MLP(nn.Module):
    hidden: int = 16
    out: int = 2

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        return nn.Dense(self.out)(nn.relu(nn.Dense(self.hidden)(x)))


def _assert_trees_equal(a, b) -> None:
    assert jax.tree_util.tree_structure(a) == jax.tree_util.tree_structure(b)
    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
        assert np.asarray(x).dtype == np.asarray(y).dtype


def test_flax_mlp_params_round_trip_give_identical_outputs(tmp_path: Path) -> None:
    model, x = _MLP(), jnp.linspace(-1.0, 1.0, 12).reshape(4, 3)
    params = model.init(jax.random.PRNGKey(0), x)
    path = tmp_path / "mlp.msgpack"
    save_pytree(path, params)
    target = model.init(jax.random.PRNGKey(1), x)  # same structure, other values
    restored = load_pytree(path, target)
    _assert_trees_equal(params, restored)
    assert all(isinstance(leaf, jax.Array) for leaf in jax.tree_util.tree_leaves(restored))
    np.testing.assert_array_equal(model.apply(params, x), model.apply(restored, x))


def test_optax_adam_state_round_trip_continues_identically(tmp_path: Path) -> None:
    params = {"w": jnp.array([1.0, -2.0, 0.5]), "b": jnp.array(0.3)}
    opt = optax.adam(0.1)
    state = opt.init(params)
    grad_fn = jax.grad(lambda p: jnp.sum(p["w"] ** 2) + p["b"] ** 2)
    step = jax.jit(lambda p, s: opt.update(grad_fn(p), s))
    for _ in range(3):
        updates, state = step(params, state)
        params = optax.apply_updates(params, updates)
    path = tmp_path / "adam.msgpack"
    save_pytree(path, {"params": params, "opt": state})
    restored = load_pytree(path, {"params": params, "opt": opt.init(params)})
    _assert_trees_equal({"params": params, "opt": state}, restored)
    assert int(restored["opt"][0].count) == 3
    # One more step from the original and from the restored state: identical.
    u1, _ = step(params, state)
    u2, _ = step(restored["params"], restored["opt"])
    _assert_trees_equal(u1, u2)


def test_leaf_kinds_and_metadata_round_trip(tmp_path: Path) -> None:
    tree = {
        "typed_key": jax.random.key(7),
        "raw_key": jax.random.PRNGKey(7),
        "np": np.arange(4, dtype=np.int16),
        "scalar": 2.5,
        "count": 3,
        "step": jnp.zeros((), jnp.int32),
        "empty": (),
    }
    meta = {"config": {"steps": 10, "lr": 3e-3}, "name": "run-1", "tags": [1, 2]}
    path = tmp_path / "sub" / "dir" / "leaves.msgpack"  # parents are created
    save_pytree(path, tree, metadata=meta)
    out = load_pytree(path, tree)
    assert jax.dtypes.issubdtype(out["typed_key"].dtype, jax.dtypes.prng_key)
    np.testing.assert_array_equal(
        jax.random.key_data(out["typed_key"]), jax.random.key_data(tree["typed_key"])
    )
    np.testing.assert_array_equal(
        jax.random.uniform(out["typed_key"], (3,)), jax.random.uniform(tree["typed_key"], (3,))
    )
    np.testing.assert_array_equal(out["raw_key"], tree["raw_key"])
    assert isinstance(out["np"], np.ndarray) and out["np"].dtype == np.int16
    assert out["scalar"] == 2.5 and isinstance(out["scalar"], float)
    assert out["count"] == 3 and isinstance(out["count"], int)
    assert load_metadata(path) == meta


def test_shape_dtype_struct_target(tmp_path: Path) -> None:
    tree = {"a": jnp.arange(3.0), "b": jnp.ones((2, 2), jnp.int32)}
    path = tmp_path / "t.msgpack"
    save_pytree(path, tree)
    out = load_pytree(path, jax.tree_util.tree_map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), tree))
    _assert_trees_equal(tree, out)
    assert load_metadata(path) == {}


def test_file_is_msgpack_not_pickle(tmp_path: Path) -> None:
    path = tmp_path / "t.msgpack"
    save_pytree(path, {"a": jnp.arange(3.0)}, metadata={"k": 1})
    raw = serialization.msgpack_restore(path.read_bytes())
    assert raw["format"] == checkpoint.FORMAT
    assert set(raw["leaves"]) == {"['a']"}
    assert not path.read_bytes().startswith(b"\x80")  # pickle protocol marker


def test_overwrite_is_atomic_and_leaves_no_temp_files(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "ck.msgpack"
    save_pytree(path, {"a": jnp.array([1.0])})
    save_pytree(path, {"a": jnp.array([2.0])})
    assert [p.name for p in tmp_path.iterdir()] == ["ck.msgpack"]
    np.testing.assert_array_equal(load_pytree(path, {"a": jnp.zeros(1)})["a"], [2.0])

    def crash(src, dst):
        raise OSError("disk vanished")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="disk vanished"):
        save_pytree(path, {"a": jnp.array([3.0])})
    monkeypatch.undo()
    assert [p.name for p in tmp_path.iterdir()] == ["ck.msgpack"]
    np.testing.assert_array_equal(load_pytree(path, {"a": jnp.zeros(1)})["a"], [2.0])


def test_missing_file_names_path(tmp_path: Path) -> None:
    path = tmp_path / "nope.msgpack"
    with pytest.raises(FileNotFoundError, match="nope.msgpack"):
        load_pytree(path, {"a": jnp.zeros(1)})
    with pytest.raises(FileNotFoundError, match="nope.msgpack"):
        load_metadata(path)


@pytest.mark.parametrize(
    "content",
    [b"", b"\xc1\xc1 definitely not msgpack", None],  # None: a truncated real checkpoint
)
def test_corrupt_file_raises_value_error_naming_path(tmp_path: Path, content: bytes | None) -> None:
    path = tmp_path / "bad.msgpack"
    if content is None:
        save_pytree(path, {"a": jnp.arange(100.0)})
        content = path.read_bytes()[:-40]
    path.write_bytes(content)
    with pytest.raises(ValueError, match="bad.msgpack"):
        load_pytree(path, {"a": jnp.arange(100.0)})


def test_foreign_msgpack_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "other.msgpack"
    path.write_bytes(serialization.to_bytes({"a": np.zeros(2)}))
    with pytest.raises(ValueError, match="other.msgpack: not a decisions checkpoint"):
        load_pytree(path, {"a": np.zeros(2)})


def test_structure_mismatch_names_the_leaf(tmp_path: Path) -> None:
    path = tmp_path / "s.msgpack"
    save_pytree(path, {"w": jnp.zeros((2, 3)), "b": jnp.zeros(3)})
    with pytest.raises(ValueError, match=r"structure mismatch.*\['extra'\]"):
        load_pytree(path, {"w": jnp.zeros((2, 3)), "b": jnp.zeros(3), "extra": jnp.zeros(1)})
    with pytest.raises(ValueError, match=r"structure mismatch.*unexpected \[\"\['b'\]\"\]"):
        load_pytree(path, {"w": jnp.zeros((2, 3))})
    with pytest.raises(ValueError, match=r"leaf \['w'\] has shape \(2, 3\).*expects shape \(3, 2\)"):
        load_pytree(path, {"w": jnp.zeros((3, 2)), "b": jnp.zeros(3)})
    with pytest.raises(ValueError, match=r"leaf \['b'\] .*dtype float32.*dtype int32"):
        load_pytree(path, {"w": jnp.zeros((2, 3)), "b": jnp.zeros(3, jnp.int32)})


def test_bad_metadata_raises_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "m.msgpack"
    with pytest.raises(ValueError, match="m.msgpack: metadata is not JSON-serialisable"):
        save_pytree(path, {"a": jnp.zeros(1)}, metadata={"f": object()})
    assert not path.exists()


KIND = "decisions.test.policy/1"


def _mlp_like(description: dict) -> dict:
    """The trained-file target: an MLP of the described width (values ignored)."""
    return _MLP(hidden=int(description["architecture"]["hidden"])).init(
        jax.random.PRNGKey(0), jnp.zeros((1, 3))
    )


def test_trained_round_trip_gives_description_and_identical_outputs(tmp_path: Path) -> None:
    model, x = _MLP(hidden=8), jnp.linspace(-1.0, 1.0, 12).reshape(4, 3)
    params = model.init(jax.random.PRNGKey(3), x)
    description = {"architecture": {"hidden": 8}, "settings": {"steps": 5}, "train_seconds": 1.5}
    path = tmp_path / "trained.msgpack"
    save_trained(path, kind=KIND, description=description, params=params)
    loaded_description, loaded = load_trained(path, kind=KIND, target=_mlp_like)
    assert loaded_description == description
    _assert_trees_equal(params, loaded)
    np.testing.assert_array_equal(model.apply(params, x), model.apply(loaded, x))


def test_trained_file_written_before_the_helper_still_loads(tmp_path: Path) -> None:
    """The domains used to write ``metadata={"format": kind, **description}`` themselves."""
    params = _mlp_like({"architecture": {"hidden": 4}})
    path = tmp_path / "old.msgpack"
    save_pytree(path, params, metadata={"format": KIND, "architecture": {"hidden": 4}, "train_value": 2.0})
    description, loaded = load_trained(path, kind=KIND, target=_mlp_like)
    assert description == {"architecture": {"hidden": 4}, "train_value": 2.0}
    _assert_trees_equal(params, loaded)


def test_trained_description_may_not_use_the_kind_key(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="reserved key 'format'"):
        save_trained(
            tmp_path / "x.msgpack", kind=KIND, description={"format": "x"}, params={"a": jnp.zeros(1)}
        )
    assert not (tmp_path / "x.msgpack").exists()


@pytest.mark.parametrize(
    ("saved_kind", "message"),
    [
        ("decisions.other.policy/1", r"holds 'decisions.other.policy/1', not 'decisions.test.policy/1'"),
        ("decisions.test.policy/2", r"has format version '2'; this version reads '1'"),
        (None, r"records no kind"),
    ],
)
def test_trained_file_of_another_kind_or_version_is_an_input_error(
    tmp_path: Path, saved_kind: str | None, message: str
) -> None:
    path = tmp_path / "other.msgpack"
    meta = {"architecture": {"hidden": 4}} | ({} if saved_kind is None else {"format": saved_kind})
    save_pytree(path, _mlp_like({"architecture": {"hidden": 4}}), metadata=meta)
    with pytest.raises(InputError, match=rf"^policy: .*other\.msgpack {message}") as err:
        load_trained(path, kind=KIND, target=_mlp_like, field="policy")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("content", [b"", b"\xc1\xc1 not msgpack", None])  # None: truncated
def test_corrupt_trained_file_is_a_one_line_input_error_naming_the_path(
    tmp_path: Path, content: bytes | None
) -> None:
    path = tmp_path / "bad.msgpack"
    if content is None:
        save_trained(
            path,
            kind=KIND,
            description={"architecture": {"hidden": 4}},
            params=_mlp_like({"architecture": {"hidden": 4}}),
        )
        content = path.read_bytes()[:-40]
    path.write_bytes(content)
    with pytest.raises(InputError, match=r"^checkpoint: .*bad\.msgpack") as err:
        load_trained(path, kind=KIND, target=_mlp_like)
    assert "\n" not in str(err.value)


def test_trained_params_not_matching_their_description_are_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "t.msgpack"
    save_trained(
        path,
        kind=KIND,
        description={"architecture": {"hidden": 4}},
        params=_mlp_like({"architecture": {"hidden": 8}}),
    )
    with pytest.raises(InputError, match=r"t\.msgpack: leaf .* has shape"):
        load_trained(path, kind=KIND, target=_mlp_like)
    save_trained(path, kind=KIND, description={"width": 4}, params={"a": jnp.zeros(1)})
    with pytest.raises(InputError, match=r"t\.msgpack: the description lacks 'architecture'"):
        load_trained(path, kind=KIND, target=_mlp_like)
    with pytest.raises(FileNotFoundError, match="nope.msgpack"):
        load_trained(tmp_path / "nope.msgpack", kind=KIND, target=_mlp_like)


def test_read_trained_reads_several_versions_and_an_untagged_layout(tmp_path: Path) -> None:
    """A reader of versions 2 and 1, version 1 tagged ``{"kind": "old"}`` instead of a kind tag."""
    params, v1, v2 = _mlp_like({"architecture": {"hidden": 4}}), "decisions.test.policy/1", "decisions.test.policy/2"

    def untagged(meta: dict) -> tuple[str, dict] | None:
        return (v1, {k: v for k, v in meta.items() if k != "kind"}) if meta.get("kind") == "old" else None

    kinds = {v2: _mlp_like, v1: _mlp_like}
    save_pytree(tmp_path / "old.msgpack", params, metadata={"kind": "old", "architecture": {"hidden": 4}})
    save_trained(tmp_path / "new.msgpack", kind=v2, description={"architecture": {"hidden": 4}}, params=params)
    old = checkpoint.read_trained(tmp_path / "old.msgpack", kinds=kinds, untagged=untagged)
    new = checkpoint.read_trained(tmp_path / "new.msgpack", kinds=kinds, untagged=untagged)
    assert (old.kind, new.kind) == (v1, v2)
    assert old.description == new.description == {"architecture": {"hidden": 4}}
    _assert_trees_equal(old.params, new.params)
    save_trained(tmp_path / "v3.msgpack", kind="decisions.test.policy/3", description={}, params=params)
    with pytest.raises(InputError, match=r"v3\.msgpack has format version '3'; this version reads '2' or '1' .*\(not a test\)$"):
        checkpoint.read_trained(tmp_path / "v3.msgpack", kinds=kinds, what="a test")
    with pytest.raises(InputError, match=r"old\.msgpack records no kind \(expected 'decisions\.test\.policy/2' or"):
        checkpoint.read_trained(tmp_path / "old.msgpack", kinds=kinds)  # no untagged reader


@pytest.mark.parametrize("tag", [["a/1"], 3, {"a": 1}])
def test_a_kind_tag_that_is_not_a_string_is_an_input_error(tmp_path: Path, tag: object) -> None:
    path = tmp_path / "odd.msgpack"
    save_pytree(path, {"a": jnp.zeros(1)}, metadata={"format": tag})
    with pytest.raises(InputError, match=r"odd\.msgpack holds"):
        load_trained(path, kind=KIND, target=_mlp_like)


def test_a_description_that_does_not_fit_its_kind_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "t.msgpack"
    save_trained(path, kind=KIND, description={"architecture": {"hidden": "wide"}}, params={"a": jnp.zeros(1)})
    with pytest.raises(InputError, match=r"^checkpoint: .*t\.msgpack: the description does not fit") as err:
        load_trained(path, kind=KIND, target=_mlp_like)
    assert "\n" not in str(err.value)


def test_key_fingerprint_is_the_same_for_a_typed_key_and_its_raw_data() -> None:
    typed = jax.random.key(7)
    raw = jax.random.PRNGKey(7)
    assert checkpoint.key_fingerprint(typed) == checkpoint.key_fingerprint(raw)
    assert checkpoint.key_fingerprint(raw) == [int(v) for v in np.asarray(raw)]
    assert checkpoint.key_fingerprint(raw) != checkpoint.key_fingerprint(jax.random.PRNGKey(8))
