"""Tests of TOML spec loading and sweep expansion."""

from __future__ import annotations

from pathlib import Path

import pytest

from decisions.kit.spec import SpecError, expand_sweep, load_toml, sweep_grid

SPEC = """\
kind = "gas_storage"
seed = 0

[scenario.prices]
volatility = 0.3
mean = 20.0

[sweep]
"scenario.prices.volatility" = [0.2, 0.4]
seed = [1, 2, 3]
"""


def _write(tmp_path: Path, text: str, name: str = "spec.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_load_toml_reads_tables(tmp_path: Path) -> None:
    spec = load_toml(_write(tmp_path, SPEC))
    assert spec["kind"] == "gas_storage"
    assert spec["scenario"] == {"prices": {"volatility": 0.3, "mean": 20.0}}
    assert spec["sweep"] == {"scenario.prices.volatility": [0.2, 0.4], "seed": [1, 2, 3]}


def test_load_toml_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.toml"
    with pytest.raises(SpecError) as info:
        load_toml(path)
    assert str(info.value) == f"{path}: cannot read: No such file or directory"


def test_load_toml_directory_is_unreadable(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r": cannot read: "):
        load_toml(tmp_path)


def test_load_toml_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.toml"
    path.write_bytes('name = "caf\xe9"\n'.encode("latin-1"))
    with pytest.raises(SpecError, match=r"cannot read: not UTF-8 text \(byte 11\)"):
        load_toml(path)


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("a = 1\nb = \nc = 3\n", 2, "Invalid value"),
        ("a = 1\n\n[t]\nx = 1\n[t]\n", 5, "twice"),
        ('a = 1\nb = "unterminated\n', 2, "Illegal character"),
        ("a = 1\nb = [1,\n", 2, "Invalid value"),  # error at end of document
    ],
)
def test_load_toml_invalid_reports_line(tmp_path: Path, text: str, line: int, fragment: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(SpecError) as info:
        load_toml(path)
    message = str(info.value)
    assert message.startswith(f"{path}: invalid TOML at line {line}: ")
    assert fragment in message
    assert "\n" not in message
    assert "(at " not in message  # the position is reported once, up front


def test_spec_error_is_a_value_error() -> None:
    assert issubclass(SpecError, ValueError)


def test_expand_sweep_builds_cartesian_grid(tmp_path: Path) -> None:
    spec = load_toml(_write(tmp_path, SPEC))
    configs = expand_sweep(spec)
    assert [(c["scenario"]["prices"]["volatility"], c["seed"]) for c in configs] == [
        (0.2, 1),
        (0.2, 2),
        (0.2, 3),
        (0.4, 1),
        (0.4, 2),
        (0.4, 3),
    ]
    for config in configs:
        assert "sweep" not in config
        assert config["kind"] == "gas_storage"
        assert config["scenario"]["prices"]["mean"] == 20.0
    # The input is untouched and the results share no mutable parts.
    assert spec["scenario"]["prices"]["volatility"] == 0.3 and "sweep" in spec
    configs[0]["scenario"]["prices"]["mean"] = -1.0
    assert configs[1]["scenario"]["prices"]["mean"] == 20.0
    assert spec["scenario"]["prices"]["mean"] == 20.0


def test_expand_sweep_without_sweep_is_one_copy() -> None:
    spec = {"a": {"b": [1, 2]}}
    (config,) = expand_sweep(spec)
    assert config == spec
    config["a"]["b"].append(3)
    assert spec == {"a": {"b": [1, 2]}}
    assert expand_sweep({"a": 1, "sweep": {}}) == [{"a": 1}]


def test_expand_sweep_creates_missing_parents() -> None:
    configs = expand_sweep({"x": 1, "sweep": {"model.net.width": [8, 16]}})
    assert configs == [{"x": 1, "model": {"net": {"width": 8}}}, {"x": 1, "model": {"net": {"width": 16}}}]


def test_expand_sweep_accepts_unquoted_dotted_keys_as_nested_tables(tmp_path: Path) -> None:
    spec = load_toml(_write(tmp_path, "[a]\nb = 0\n[sweep]\na.b = [1, 2]\n"))
    assert spec["sweep"] == {"a": {"b": [1, 2]}}  # how TOML reads an unquoted dotted key
    assert [c["a"]["b"] for c in expand_sweep(spec)] == [1, 2]


def test_expand_sweep_values_may_be_tables_and_are_copied() -> None:
    shared = {"kind": "gbm", "sigma": 0.2}
    configs = expand_sweep({"sweep": {"process": [shared, {"kind": "ou"}]}})
    assert [c["process"] for c in configs] == [{"kind": "gbm", "sigma": 0.2}, {"kind": "ou"}]
    configs[0]["process"]["sigma"] = 9.0
    assert shared["sigma"] == 0.2


def test_sweep_grid_lists_assignments_in_expansion_order() -> None:
    assert sweep_grid({"sweep": {"a": [1, 2], "b.c": ["x"]}}) == [{"a": 1, "b.c": "x"}, {"a": 2, "b.c": "x"}]
    assert sweep_grid({"a": 1}) == [{}]


@pytest.mark.parametrize(
    ("sweep", "pattern"),
    [
        ({"seed": 3}, r"sweep key 'seed' must be a non-empty list"),
        ({"seed": []}, r"sweep key 'seed' must be a non-empty list"),
        ({"a.b": "xy"}, r"sweep key 'a.b' must be a non-empty list"),
        ({"a..b": [1]}, r"sweep key 'a..b' has an empty part"),
    ],
)
def test_expand_sweep_rejects_bad_sweeps(sweep: dict, pattern: str) -> None:
    with pytest.raises(SpecError, match=pattern):
        expand_sweep({"sweep": sweep})


def test_expand_sweep_rejects_non_table_sweep() -> None:
    with pytest.raises(SpecError, match="'sweep' must be a table"):
        expand_sweep({"sweep": [1, 2]})


def test_expand_sweep_rejects_key_through_a_scalar() -> None:
    with pytest.raises(SpecError, match=r"sweep key 'lr.decay': 'lr' is a float, not a table"):
        expand_sweep({"lr": 0.1, "sweep": {"lr.decay": [0.9]}})
