"""Chronic care's d3rlpy DiscreteCQL peer: its episodes from the logs, and a tiny training run."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from decisions.errors import InputError
from decisions.health.chronic.cql import logged_rewards, state_features
from decisions.health.chronic.logs import Logs
from decisions.health.chronic.model import CONTROLLED, N_ACTIONS, N_STATES
from decisions.health.chronic.peer_cql import peer_episodes, peer_policy
from decisions.health.chronic.scoring import Case, draw_logs, make_case, score
from decisions.health.chronic.settings import Clinicians, HtnMachine, Neural, Problem, Reward


@pytest.fixture(scope="module")
def case() -> Case:
    return make_case("htn", HtnMachine(), Problem(horizon=4), Reward(), "hold")


@pytest.fixture(scope="module")
def logs(case: Case) -> Logs:
    return draw_logs(case, Clinicians(), 50, jax.random.PRNGKey(4))


def test_each_patient_is_one_episode_ending_at_control_or_the_horizon(case: Case, logs: Logs) -> None:
    episodes = peer_episodes(case, logs)
    used = logs.states[:, :-1] != CONTROLLED
    assert len(episodes.actions) == used.sum()
    assert episodes.terminals.sum() == len(logs.kappa) and episodes.timeouts.sum() == 0
    np.testing.assert_array_equal(episodes.rewards, logged_rewards(logs, case.reward, case.horizon)[used])
    t = np.broadcast_to(np.arange(case.horizon), used.shape)[used]
    np.testing.assert_array_equal(episodes.observations, state_features(case.horizon)[t, logs.states[:, :-1][used]])


def test_an_unobserved_visit_cuts_the_episode_with_a_timeout(case: Case, logs: Logs) -> None:
    observed = np.ones(logs.actions.shape, bool)
    observed[:, 2] = False
    episodes = peer_episodes(case, logs._replace(observed=observed))
    cut = (logs.states[:, 2] != CONTROLLED)  # still transient at the unobserved visit: cut short there
    assert episodes.timeouts.sum() == cut.sum()
    used = (logs.states[:, :-1] != CONTROLLED) & observed
    assert len(episodes.actions) == used.sum() + cut.sum()


def test_the_peer_trains_and_gives_a_greedy_policy(case: Case, logs: Logs) -> None:
    pytest.importorskip("d3rlpy")
    policy, seconds = peer_policy(case, logs, Neural(steps=20, batch=16, width=8, depth=1), seed=0)
    assert policy.shape == (case.horizon, N_STATES, N_ACTIONS) and seconds > 0
    np.testing.assert_array_equal(np.asarray(policy).max(-1), 1.0)
    value, curve = score(case, policy, "full")
    assert np.isfinite(value) and 0.0 <= curve[-1] <= 1.0


def test_logs_without_a_usable_visit_give_the_peer_no_episodes(case: Case) -> None:
    states = np.full((2, case.horizon + 1), CONTROLLED)
    logs = Logs(states, np.ones((2, case.horizon), int), np.ones(2, np.float32), np.arange(2))
    with pytest.raises(InputError, match="logs"):
        peer_episodes(case, logs)
