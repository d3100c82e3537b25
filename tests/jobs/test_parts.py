"""A job's independent parts (``decisions.kit.parts``): in process by default, through the runner
put in place for the job (``parts_runner``), in order, with progress, and a failed part named."""

from __future__ import annotations

import pytest

from decisions.kit.parts import PartFailed, distributed, parts_runner, run_parts
from decisions.platform.runner import Config, SerialRunner


def square(config: Config) -> float:
    """A part: the square of ``x``, or a ValueError for a negative one."""
    if config["x"] < 0:
        raise ValueError(f"x: {config['x']} is negative")
    return config["x"] ** 2


def test_parts_come_back_in_order_with_progress() -> None:
    seen: list[tuple[str, int, int]] = []
    configs = [{"x": x} for x in (3, 1, 2)]
    assert not distributed()
    assert run_parts(square, configs, label="squares", progress=lambda *a: seen.append(a)) == [9, 1, 4]
    assert seen[-1] == ("squares", 3, 3)


def test_the_runner_put_in_place_gets_the_parts_for_the_block_only() -> None:
    asked: list[list[Config]] = []

    class Recording(SerialRunner):
        def run(self, fn, configs, *, progress=None):  # noqa: ANN001, ANN202 (the Runner protocol's)
            asked.append(list(configs))
            return super().run(fn, configs, progress=progress)

    with parts_runner(Recording()):
        assert distributed()
        assert run_parts(square, [{"x": 2}], label="squares") == [4]
    assert not distributed()
    assert run_parts(square, [{"x": 5}], label="squares") == [25]
    assert asked == [[{"x": 2}]]


def test_a_failed_part_is_named_with_the_count() -> None:
    with pytest.raises(PartFailed, match=r"^2 of 3 squares parts failed; the first: ValueError: x: -1 is negative$"):
        run_parts(square, [{"x": 1}, {"x": -1}, {"x": -2}], label="squares")


def test_a_single_job_hands_its_parts_to_a_runner_that_runs_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    from decisions.platform import execute
    from decisions.platform.execute import ExecutionOutcome, PreparedJob, execute_specs

    seen: list[bool] = []

    def one(only: PreparedJob, *, progress: object, url: str | None) -> ExecutionOutcome:
        seen.append(distributed())
        return ExecutionOutcome(1, None)

    class PartsRunner(SerialRunner):
        runs_parts = True

    monkeypatch.setattr(execute, "_execute_one", one)
    monkeypatch.setattr("decisions.store.get_engine", lambda url=None: None)
    job = PreparedJob("toy", None, {}, None)
    execute_specs([job], runner=PartsRunner())
    execute_specs([job], runner=SerialRunner())  # a process pool's or serial single job does its own parts
    assert seen == [True, False]
