"""DAgger's own effect (``comp.dagger_ablation``): earlier stages exported from a run's training checkpoints, scored."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from decisions.errors import InputError
from decisions.telecom.comp import dagger_cli
from decisions.telecom.comp.dt.datasets import OfflineDataset, generate_dataset
from decisions.telecom.comp.dt.dt_train import params_from_training, train_promptdt
from decisions.telecom.comp.dt.promptdt import PromptDTConfig, init_params
from decisions.telecom.comp.dt.saved import load_params, save_params
from decisions.telecom.comp.policies.heuristics import SERVING_SET_POLICIES
from decisions.telecom.comp.policies.rollouts import task_policy
from decisions.telecom.comp.sim.catalog import JOINT_TRAINING_TASKS
from decisions.telecom.comp.study import dagger_ablation
from decisions.telecom.comp.study.folder import task_file

TINY = PromptDTConfig(embed_dim=16, n_layers=1, n_heads=2, dropout=0.0, context_len=3, prompt_len=3, max_ep_len=100)
TASK = min(JOINT_TRAINING_TASKS, key=lambda t: (t.n_cells, t.n_users))


@pytest.fixture(scope="module")
def demos() -> OfflineDataset:
    """Two max-SNR episodes of ``TASK``: one dataset for both trainings, so they compile one step program."""
    return generate_dataset(TASK, {"max_snr": SERVING_SET_POLICIES["max_snr"]}, 2, seed=5)


def test_earlier_stages_are_exported_from_the_training_checkpoints_and_scored(tmp_path, monkeypatch, demos) -> None:
    folder, checkpoints = tmp_path / "study", tmp_path / "run" / "checkpoints"
    task_file(folder, "demos", TASK, "npz").parent.mkdir(parents=True)
    demos.save(task_file(folder, "demos", TASK, "npz"))
    before, _ = train_promptdt([demos], TINY, 2, 2, log_every=1, checkpoint=checkpoints / "promptdt-small.msgpack")
    after, _ = train_promptdt([demos], TINY, 2, 2, log_every=1, initial=before,
                              checkpoint=checkpoints / "promptdt-small-dagger1.msgpack")
    save_params(folder / "models" / "promptdt-small.msgpack", after, TINY, use_prompt=True, conditioning="return")

    params, config, use_prompt = params_from_training(checkpoints / "promptdt-small.msgpack")
    assert config == TINY and use_prompt
    for a, b in zip(jax.tree_util.tree_leaves(params), jax.tree_util.tree_leaves(before), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    with pytest.raises(ValueError, match="not a Prompt-DT training checkpoint"):
        params_from_training(folder / "models" / "promptdt-small.msgpack")

    written = dagger_ablation.export_stages(checkpoints, folder)
    assert [p.name for p in written] == ["promptdt-small-r0.msgpack"]  # the last stage is the study's own model
    exported, _ = load_params(written[0])
    np.testing.assert_allclose(jax.tree_util.tree_leaves(exported)[3], jax.tree_util.tree_leaves(before)[3], atol=1e-3)
    assert set(dagger_ablation.stage_models(folder)) == {("promptdt-small", 0), ("promptdt-small", 1)}
    # a model whose earlier stages were not kept is left out: its final model's stage is unknown
    save_params(folder / "models" / "dt.msgpack", after, TINY, use_prompt=False, conditioning="return")
    assert set(dagger_ablation.stage_models(folder)) == {("promptdt-small", 0), ("promptdt-small", 1)}

    max_snr = task_policy(SERVING_SET_POLICIES["max_snr"])
    monkeypatch.setattr(dagger_ablation, "expert_of", lambda folder, task: max_snr)  # no PPO expert in a unit test
    table = dagger_ablation.score_stages(folder, [TASK], [], episodes=2)
    assert sorted(zip(table.policy, table.stage, strict=True)) == [("expert", -1), ("promptdt-small", 0), ("promptdt-small", 1),
                                                      ("random", -1)]
    refs = table.set_index("policy")
    assert refs.loc["random", "expert_normalised_qoe"] == pytest.approx(0.0)
    assert refs.loc["expert", "expert_normalised_qoe"] == pytest.approx(1.0)
    # the study's evaluation table (same keys) gives the random, expert and final-model rows; only earlier
    # stages are played again
    evaluation = table[table.stage != 0].assign(qoe=lambda t: t.qoe + 0.01)
    reused = dagger_ablation.score_stages(folder, [TASK], [], episodes=2, evaluation=evaluation).set_index(["policy", "stage"])
    played = table.set_index(["policy", "stage"])
    for key in [("random", -1), ("expert", -1), ("promptdt-small", 1)]:
        assert reused.loc[key, "qoe"] == pytest.approx(played.loc[key, "qoe"] + 0.01)
    assert reused.loc[("promptdt-small", 0), "qoe"] == pytest.approx(played.loc[("promptdt-small", 0), "qoe"])
    summary = dagger_ablation.stage_summary(table)
    assert summary.loc[("promptdt-small", 1), ("mean", "train")] == pytest.approx(
        table[(table.policy == "promptdt-small") & (table.stage == 1)].expert_normalised_qoe.iloc[0])


def test_a_model_without_its_training_checkpoint_names_checkpoints(tmp_path) -> None:
    # a model file of TINY's shapes (zeros: only its name and metadata are read before the error)
    shapes = jax.eval_shape(lambda: init_params(TINY, jax.random.PRNGKey(0)))
    params = jax.tree_util.tree_map(lambda leaf: np.zeros(leaf.shape, leaf.dtype), shapes)
    save_params(tmp_path / "models" / "promptdt-small.msgpack", params, TINY, use_prompt=True)
    with pytest.raises(InputError) as err:
        dagger_ablation.export_stages(tmp_path / "nowhere", tmp_path)
    assert err.value.field == "checkpoints"


def test_stage_figures_flatten_the_summary() -> None:
    import pandas as pd

    table = pd.DataFrame({
        "task": ["a", "b", "a", "b", "a"], "split": ["unseen", "unseen", "unseen", "unseen", "train"],
        "policy": ["promptdt-small"] * 5, "stage": [0, 0, 1, 1, 1], "qoe": [0.3] * 5,
        "expert_normalised_qoe": [0.8, 0.6, 0.9, 0.7, 0.95],
    })
    figures = dagger_ablation.stage_figures(table)
    assert figures["dagger_promptdt-small_r0_unseen"] == pytest.approx(0.7)
    assert figures["dagger_promptdt-small_r1_unseen_worst"] == pytest.approx(0.7)
    assert figures["dagger_promptdt-small_r1_train"] == pytest.approx(0.95)
    assert np.isnan(figures["dagger_promptdt-small_r0_train"])  # no training network at that stage


def test_the_command_line_names_bad_input_in_one_line_and_exits_2(tmp_path, capsys) -> None:
    with pytest.raises(SystemExit) as stopped:
        dagger_cli.main(["--spec", str(tmp_path / "missing.toml")])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "missing.toml" in err
