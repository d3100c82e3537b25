"""DAgger for the CoMP (Prompt-)DTs (``comp.dagger``): labels on the model's own states, rounds, fine-tuning."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from decisions.telecom.comp.dt import dagger
from decisions.telecom.comp.dt.datasets import OfflineDataset, generate_dataset
from decisions.telecom.comp.dt.dt_train import train_promptdt
from decisions.telecom.comp.dt.promptdt import PromptDTConfig, init_params
from decisions.telecom.comp.dt.saved import SavedDT
from decisions.telecom.comp.policies.heuristics import SERVING_SET_POLICIES, random_set_size
from decisions.telecom.comp.policies.rollouts import ENV, task_policy
from decisions.telecom.comp.sim.catalog import JOINT_TRAINING_TASKS
from decisions.telecom.comp.study.budget import StudyBudget
from decisions.telecom.comp.study.context import StudyContext

TINY = PromptDTConfig(embed_dim=16, n_layers=1, n_heads=2, dropout=0.0, context_len=3, prompt_len=3, max_ep_len=100)
TASK = min(JOINT_TRAINING_TASKS, key=lambda t: (t.n_cells, t.n_users))
MAX_SNR = task_policy(SERVING_SET_POLICIES["max_snr"]).fn  # a labeler whose labels are known: one cell each
STEPS = 2
"""Fine-tuning steps (of batches of 2): the DAgger ablation's tests train this config for as many."""


@pytest.fixture(scope="module")
def demos() -> OfflineDataset:
    """Two max-SNR episodes of ``TASK`` (no baseline rewards)."""
    return generate_dataset(TASK, {"max_snr": SERVING_SET_POLICIES["max_snr"]}, 2, seed=5)


@pytest.fixture(scope="module")
def random_gains() -> OfflineDataset:
    """Three random-serving-set episodes of ``TASK`` with max-SNR's reward in every visited state."""
    baseline = SERVING_SET_POLICIES["max_snr"]
    return generate_dataset(TASK, {"random": random_set_size}, 3, seed=8, baseline=baseline)


@pytest.fixture(scope="module")
def model() -> SavedDT:
    return SavedDT(init_params(TINY, jax.random.PRNGKey(0)), TINY, True)


def test_labels_are_the_labelers_actions_in_the_states_the_model_visited(model: SavedDT, demos) -> None:
    data = dagger.dagger_dataset(model, TASK, demos, 2, seed=9, labeler=MAX_SNR)
    assert data.episodes == 2 and set(data.behaviour) == {"dagger"} and data.task == TASK
    mask = np.asarray(TASK.params().user_mask, bool)
    labels = data.actions[..., mask]
    assert np.all(data.actions[..., ~mask] == 0) and set(np.unique(labels)) <= {0, 1} and labels.mean() > 0.8
    played = model.episodes(TASK, demos, jax.random.split(jax.random.PRNGKey(9), 2))
    assert not np.array_equal(np.asarray(played.actions), data.actions)  # the model's actions drove, not the labels
    assert np.all(data.qoe >= 0.0) and np.all(data.qoe <= 1.0) and np.all(np.abs(data.rewards) <= 1.0)
    # the labels' rewards are max-SNR's, which beats the untrained model on these states
    assert data.rewards.mean() > np.asarray(played.rewards).mean()


def test_rounds_add_each_tasks_episodes_and_fine_tune_after_each(model: SavedDT, demos) -> None:
    calls = []

    def fake_train(datasets, params, r):
        calls.append((r, [d.episodes for d in datasets]))
        return params

    # two episodes a round: the labelled episodes' program is the first test's
    params, data = dagger.dagger_rounds(model.params, TINY, True, [demos], [demos], fake_train, rounds=2, episodes=2,
                                        seed=0, labeler=MAX_SNR)
    assert calls == [(0, [4]), (1, [6])] and params is model.params
    assert list(data[0].behaviour) == ["max_snr"] * 2 + ["dagger"] * 4
    other = generate_dataset(JOINT_TRAINING_TASKS[0], {"max_snr": SERVING_SET_POLICIES["max_snr"]}, 2, seed=5)
    assert other.task != TASK
    with pytest.raises(ValueError, match="same task"):
        dagger.concatenate([demos, other])


def test_fine_tuning_starts_from_the_given_parameters(model: SavedDT, demos) -> None:
    tuned, metrics = train_promptdt([demos], TINY, STEPS, 2, initial=model.params)
    first = jax.tree_util.tree_leaves(model.params)[3]
    assert np.abs(np.asarray(jax.tree_util.tree_leaves(tuned)[3]) - np.asarray(first)).max() < 1e-2
    assert metrics["loss"].shape == (STEPS,)
    # the parameters of another architecture (their shapes are what is checked: zeros, not an initialisation)
    wider = PromptDTConfig(embed_dim=32, n_layers=1, n_heads=2, context_len=3, prompt_len=3)
    shapes = jax.eval_shape(lambda: init_params(wider, jax.random.PRNGKey(0)))
    other = jax.tree_util.tree_map(lambda leaf: np.zeros(leaf.shape, leaf.dtype), shapes)
    with pytest.raises(ValueError, match="^initial: "):
        train_promptdt([demos], TINY, STEPS, 2, initial=other)


def test_dagger_needs_the_planner_as_demonstrator() -> None:
    with pytest.raises(ValueError, match="^dagger_rounds: "):
        StudyBudget(dagger_rounds=1)
    assert StudyBudget(dagger_rounds=2, demonstrator="planner").dagger_rounds == 2
    with pytest.raises(ValueError, match="^dagger_episodes: "):
        StudyBudget(dagger_episodes=0)
    assert ENV.obs_size > 0


@pytest.mark.parametrize("conditioning", ["return", "advantage"])
def test_the_study_runs_each_models_dagger_rounds_after_its_training(
    tmp_path, monkeypatch: pytest.MonkeyPatch, conditioning: str, random_gains: OfflineDataset
) -> None:
    from pathlib import Path

    from decisions.telecom.comp.study import dagger_ablation
    from decisions.telecom.comp.study import stages as study
    from decisions.telecom.comp.study.folder import task_file

    one = random_gains.take([0])  # one episode, with its baseline rewards for the advantage
    learnt = one.advantage_view().rewards if conditioning == "advantage" else one.rewards
    for kind in ("data", "demos"):
        task_file(tmp_path, kind, TASK, "npz").parent.mkdir(parents=True, exist_ok=True)
        one.save(task_file(tmp_path, kind, TASK, "npz"))
    calls: list[tuple] = []

    def fake_train(datasets, config, steps, batch_size=32, seed=0, progress=None, use_prompt=True, log_every=50,
                   checkpoint=None, initial=None):  # the training is train_promptdt's tests'; this is the plumbing
        calls.append((use_prompt, steps, initial, [d.episodes for d in datasets], Path(checkpoint).name))
        np.testing.assert_array_equal(datasets[0].rewards[:1], learnt)  # what the model is conditioned on
        return {"after": len(calls)}, {"loss": np.zeros(steps), "accuracy": np.ones(steps), "use_prompt": use_prompt}

    saved: dict[str, tuple] = {}

    def fake_save(path, params, config, **meta):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text("model")
        saved[Path(path).name.replace(".partial", "")] = (params, meta.get("steps", meta.get("dagger_stage")))
        assert meta["conditioning"] == conditioning

    monkeypatch.setattr(study, "train_promptdt", fake_train)
    monkeypatch.setattr(study, "save_params", fake_save)
    monkeypatch.setattr(dagger_ablation, "save_params", fake_save)  # the DAgger stages' writer
    monkeypatch.setattr(dagger, "dagger_dataset", lambda model, task, demo, episodes, seed, labeler=None: demo)
    budget = StudyBudget(dt_steps=5, dagger_rounds=2, dagger_steps=3, demonstrator="planner", sizes=("small",),
                         conditioning=conditioning)  # fmt: skip
    ctx = StudyContext(tmp_path, budget, (TASK,), (), checkpoints=lambda name, iterations, every: tmp_path / f"{name}.ck")
    study.train_dt_models(ctx)
    for prompt, first in ((True, 0), (False, 3)):
        model = "promptdt-small" if prompt else "dt"
        assert calls[first:first + 3] == [
            (prompt, 5, None, [1], f"{model}.ck"),
            (prompt, 3, {"after": first + 1}, [2], f"{model}-dagger1.ck"),  # the model's own episodes added
            (prompt, 3, {"after": first + 2}, [3], f"{model}-dagger2.ck"),
        ]
        assert saved[f"{model}.msgpack"] == ({"after": first + 3}, 11)  # the last round's, 5 + 2 x 3 steps
        # each earlier stage kept in the study folder for the DAgger ablation (the run's checkpoints are removed)
        assert saved[f"{model}-r0.msgpack"] == ({"after": first + 1}, 0)
        assert saved[f"{model}-r1.msgpack"] == ({"after": first + 2}, 1)
        assert (tmp_path / "models" / "dagger" / f"{model}-r1.msgpack").exists()


def test_advantage_conditioning_measures_each_step_against_max_snr_in_the_same_state(
    tmp_path, demos: OfflineDataset, random_gains: OfflineDataset
) -> None:
    from decisions.telecom.comp.policies.rollouts import rollout

    keys = jax.random.split(jax.random.PRNGKey(4), 2)
    same = rollout(TASK, SERVING_SET_POLICIES["max_snr"], keys, baseline=SERVING_SET_POLICIES["max_snr"])
    np.testing.assert_array_equal(same["baseline_reward"], same["reward"])  # max-SNR against itself: no gain
    data = random_gains
    gain = data.advantage_view()
    np.testing.assert_allclose(gain.rewards, data.rewards - data.baseline_rewards)
    assert gain.rewards.mean() < 0.0  # random serving sets lose to max-SNR in the states they reach
    data.save(tmp_path / "d.npz")
    back = OfflineDataset.load(tmp_path / "d.npz")
    np.testing.assert_array_equal(back.baseline_rewards, data.baseline_rewards)
    assert back.take([1]).baseline_rewards.shape == (1, data.horizon)
    assert demos.baseline_rewards is None
    with pytest.raises(ValueError, match="^baseline_rewards: "):
        demos.advantage_view()
    with pytest.raises(ValueError, match="^conditioning: "):
        StudyBudget(conditioning="luck")


def test_an_advantage_model_is_prompted_targeted_and_labelled_in_advantage_units(
    model: SavedDT, random_gains: OfflineDataset
) -> None:
    demos = random_gains
    gain = SavedDT(model.params, TINY, True, "advantage")
    best = int(np.argmax(demos.returns()))  # the best demonstration by return, whose advantage is the target
    prompt, target = gain.conditioning(demos)
    assert float(target) == pytest.approx(demos.advantage_view().returns()[best], rel=1e-5)
    assert float(model.conditioning(demos)[1]) == pytest.approx(demos.returns()[best], rel=1e-5)
    assert not np.allclose(np.asarray(prompt.rtg), np.asarray(model.conditioning(demos)[0].rtg))
    labelled = dagger.dagger_dataset(gain, TASK, demos, 1, seed=2, labeler=MAX_SNR)
    np.testing.assert_allclose(labelled.baseline_rewards, labelled.rewards, atol=1e-6)  # max-SNR labels: no gain
    assert dagger.dagger_dataset(model, TASK, demos, 2, seed=2, labeler=MAX_SNR).baseline_rewards is None
    both = dagger.concatenate([demos, labelled])
    assert both.baseline_rewards.shape == (4, demos.horizon)
    assert dagger.concatenate([both, dagger.dagger_dataset(model, TASK, demos, 2, seed=2, labeler=MAX_SNR)]).baseline_rewards is None
