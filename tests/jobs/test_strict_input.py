"""User input read strictly before any run starts: the findings of the reliability review, one test each.

``decisions.core.strict_input`` reads every field of every ``Settings`` table and job by its declared
type; these tests pin its rules and the input files checked when the spec is read.
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import Field

from decisions.core.settings import Settings
from decisions.core.strict_input import SEED_MAX, Float64, Seed, value_problem
from decisions.errors import InputError
from decisions.platform.registry import get


class _Row(Settings):
    section = "row"

    share: float = 0.5
    on: bool = True


class _Table(Settings):
    section = "table"

    count: int = Field(1, ge=0)
    rate: float = 0.5
    wide: Annotated[float, Float64()] = 0.0
    flag: bool = False
    seed: Seed = 0
    rates: list[float] = Field(default_factory=list)
    limit: int | None = None
    cap: float | None = None
    rows: list[_Row] = Field(default_factory=list)


@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [
        ("count", True, "expected an integer, got the boolean true"),
        ("count", "90", "expected an integer, got the text '90'"),
        ("count", 2**64, "18446744073709551616 is beyond the 64-bit integer range"),
        ("count", math.nan, "nan is not finite"),
        ("limit", 10**30, "is beyond the 64-bit integer range"),
        ("cap", 1e39, "1e+39 is out of range"),
        ("cap", True, "expected a number, got the boolean true"),
        ("cap", math.inf, "inf is not finite"),
        ("rate", math.nan, "nan is not finite"),
        ("rate", -math.inf, "-inf is not finite"),
        ("rate", 1e39, "1e+39 is out of range (magnitude at most 3.4e+38)"),
        ("rate", 1e308, "1e+308 is out of range"),
        ("rate", 10**400, "out of range"),
        ("rate", False, "expected a number, got the boolean false"),
        ("rate", "0.5", "expected a number, got the text '0.5'"),
        ("wide", math.inf, "inf is not finite"),
        ("flag", 1, "expected true or false, got 1"),
        ("flag", "yes", "expected true or false, got 'yes'"),
        ("seed", SEED_MAX + 1, "less than or equal to 4294967295"),
    ],
)
def test_a_field_refuses_values_of_the_wrong_kind_in_one_line_naming_it(key: str, value: Any, problem: str) -> None:
    with pytest.raises(InputError) as info:
        _Table.parse({key: value})
    assert info.value.field == f"table.{key}" and problem in info.value.problem and "\n" not in str(info.value)


def test_a_model_inside_a_list_reads_its_own_fields_strictly_and_names_the_item() -> None:
    with pytest.raises(InputError) as info:
        _Table.parse({"rows": [{"share": 0.1}, {"share": 0.2, "on": 1}]})
    assert info.value.field == "table.rows.1.on" and "expected true or false, got 1" in info.value.problem
    assert [r.share for r in _Table.parse({"rows": [{"share": 1}, {"on": False}]}).rows] == [1.0, 0.5]


def test_list_items_are_located_and_good_values_pass_unchanged() -> None:
    with pytest.raises(InputError) as info:
        _Table.parse({"rates": [0.1, 1e39]})
    assert info.value.field == "table.rates.1"
    table = _Table.parse({"count": 3, "rate": 2, "wide": 1e300, "flag": True, "seed": SEED_MAX, "rates": [1, 0.5]})
    assert (table.count, table.rate, table.wide, table.flag, table.seed, table.rates) == (3, 2.0, 1e300, True, SEED_MAX,
                                                                                          [1.0, 0.5])
    assert (_Table.parse({"cap": None, "limit": None}).cap, _Table.parse({"cap": 2.5, "limit": 7}).cap) == (None, 2.5)


def test_value_problem_reads_nested_types() -> None:
    assert value_problem(list[tuple[float, float]], [(1.0, 2.0), (1.0, True)]) == ((1, 1), "expected a number, got the boolean true")
    assert value_problem(dict[str, int], {"a": 1, "b": "2"}) == (("b",), "expected an integer, got the text '2'")
    assert value_problem(int | str, "anything") is None  # a member takes it
    assert value_problem(int | list[int], True) == ((), "expected an integer, got the boolean true")
    assert value_problem(int | list[int], [1, "2"]) == ((1,), "expected an integer, got the text '2'")
    assert value_problem(float | None, math.inf) == ((), "inf is not finite")


def _example(name: str) -> tuple[dict[str, Any], Path]:
    domain = get(name)
    spec = tomllib.loads(domain.example_path.read_text())
    spec.pop("sweep", None)
    return spec, domain.example_path.parent


def _refused(name: str, changes: dict[str, Any], field: str, words: str = "", base: dict[str, Any] | None = None,
             base_dir: Path | None = None) -> InputError:
    spec, folder = _example(name) if base is None else (base, base_dir)
    for dotted, value in changes.items():
        *tables, key = dotted.split(".")
        node = spec
        for table in tables:
            node = node.setdefault(table, {})
        node[key] = value
    with pytest.raises(InputError) as info:
        get(name).prepare(spec, folder)
    assert info.value.field == field and words in info.value.problem, str(info.value)
    return info.value


@pytest.mark.parametrize(
    ("name", "dotted", "value", "field"),
    [
        ("utility", "frontier.switch_tau", 1e39, "frontier.switch_tau"),
        ("utility", "frontier.linucb_alphas", [0.0, 1e39], "frontier.linucb_alphas.1"),
        ("utility", "weights.production", [1e39, 0.25, 0.25], "weights.production.0"),
        ("splitfl", "devices.round_deadline_s", 1e39, "devices.round_deadline_s"),
    ],
)
def test_numbers_beyond_float32_are_refused_in_the_newer_domains(name: str, dotted: str, value: Any, field: str) -> None:
    _refused(name, {dotted: value}, field, "out of range")


@pytest.mark.parametrize(
    ("name", "dotted", "field"),
    [
        ("gas_storage", "job.seed", "job.seed"),
        ("utility", "logs.seed", "logs.seed"),
        ("utility", "simulator.world_seed", "simulator.world_seed"),
        ("splitfl", "training.seeds", "training.seeds.0"),
        ("traffic", "demand.train_seeds", "demand.train_seeds.0"),
        ("traffic", "agent.seed", "agent.seed"),
    ],
)
def test_seeds_are_bounded(name: str, dotted: str, field: str) -> None:
    value = [2**32] if dotted.endswith("seeds") else 2**32
    _refused(name, {dotted: value}, field, "less than or equal to")
    _refused(name, {dotted: [10**20] if isinstance(value, list) else 10**20}, field, "64-bit")


def test_sumo_seeds_fit_sumo() -> None:
    _refused("traffic", {"demand.test_seeds": [2**31]}, "demand.test_seeds.0", "less than or equal to 2147483647")


def test_silent_coercions_are_refused() -> None:
    _refused("traffic", {"agent.env_steps": True}, "agent.env_steps", "boolean true")
    _refused("traffic", {"scenarios.seconds": "90"}, "scenarios.seconds", "text '90'")
    _refused("gas_storage", {"snapo.steps": True}, "snapo.steps", "boolean true")
    _refused("building", {"evaluation.include_mpc": 1}, "evaluation.include_mpc", "expected true or false")


def test_nan_is_reported_as_not_finite_rather_than_out_of_range() -> None:
    _refused("utility", {"frontier.switch_tau": math.nan}, "frontier.switch_tau", "nan is not finite")
    _refused("splitfl", {"training.learning_rate": math.nan}, "training.learning_rate", "nan is not finite")


def test_more_training_or_test_images_than_the_dataset_has_are_refused() -> None:
    _refused("splitfl", {"data.train_samples": 1438}, "data.train_samples", "1438 exceeds the 1437 training images")
    _refused("splitfl", {"data.test_samples": 361}, "data.test_samples", "361 exceeds the 360 test images")
    spec, folder = _example("splitfl")
    spec.setdefault("data", {})["train_samples"] = 1437
    get("splitfl").prepare(spec, folder)  # all of them is fine


def test_the_digits_sizes_are_those_the_loader_gives() -> None:
    from decisions.telecom.splitfl.data import digits_sizes, load_digits_data

    data = load_digits_data()
    assert digits_sizes() == (len(data.y_train), len(data.y_test))


def test_missing_fashion_mnist_is_found_when_the_spec_is_read(tmp_path: Path) -> None:
    spec, folder = _example("splitfl")
    spec["data"] = {"dataset": "fashion", "path": str(tmp_path)}
    spec.setdefault("training", {}).pop("arch", None)
    with pytest.raises(InputError) as info:
        get("splitfl").prepare(spec, folder)
    assert info.value.field == "data.path" and "Fashion-MNIST not found" in info.value.problem


def test_fashion_mnist_sizes_come_from_the_label_headers(tmp_path: Path) -> None:
    import gzip

    from decisions.telecom.splitfl.data import FASHION_MNIST_FILES, fashion_mnist_sizes

    for key, name in FASHION_MNIST_FILES.items():
        count = 120 if key.endswith("train") else 30
        with gzip.open(tmp_path / name, "wb") as file:
            file.write(bytes([0, 0, 8, 1]) + count.to_bytes(4, "big") + bytes(count) if key.startswith("y")
                       else b"\0\0\x08\x03")
    assert fashion_mnist_sizes(tmp_path) == (120, 30)
    with gzip.open(tmp_path / FASHION_MNIST_FILES["y_test"], "wb") as file:
        file.write(b"\0\0\x08\x03" + bytes(12))
    with pytest.raises(InputError, match="data.path: .* is not an IDX label file"):
        fashion_mnist_sizes(tmp_path)


def test_a_comp_study_folder_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "study").write_text("not a folder")
    _refused("comp", {"study.folder": str(tmp_path / "study")}, "study.folder", "is a file, not a folder")


def test_production_weights_that_sum_to_zero_are_refused() -> None:
    _refused("utility", {"weights.production": [0, 0, 0]}, "weights.production", "sum to more than 0")


def test_a_check_across_fields_names_the_field_it_is_about() -> None:
    _refused("utility", {"agent.conditioning": "lambda", "frontier.chebyshev": True}, "frontier.chebyshev", "lambda")
