"""One save/load protocol for trained models: every writer's file is a ``save_trained`` file of its
kind (``"<name>/<version>"``) read back by ``load_trained``; another kind or version is one
``InputError`` line; the shipped models load with the params they always had."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pandas as pd
import pytest

from decisions.core.agents import dqn, ppo
from decisions.core.agents.common import TrainResult
from decisions.core.agents.offpolicy import io as offpolicy_io
from decisions.core.agents.onpolicy import ActorCriticPolicy
from decisions.core.agents.onpolicy import io as onpolicy_io
from decisions.core.checkpoint import load_trained, read_trained, save_pytree
from decisions.errors import InputError
from decisions.finance.wealth import planner as wealth_planner
from decisions.finance.wealth.meta_env import N_FEATURES
from decisions.finance.wealth.planner_limits import MAX_OPTIONS
from decisions.mobility.traffic.trained import TrainedAgent
from decisions.telecom.comp.dt import saved as dt_saved
from decisions.telecom.comp.dt.promptdt import PromptDTConfig, init_params
from decisions.telecom.comp.policies import experts
from decisions.telecom.comp.sim.catalog import TRAINING_TASKS
from decisions.telecom.splitfl import agent as splitfl

ROOT = Path(__file__).resolve().parents[1]
AC_KIND, OFF_KIND = onpolicy_io.POLICY_FORMAT, offpolicy_io.POLICY_FORMAT
TINY_DT = PromptDTConfig(embed_dim=16, n_layers=1, n_heads=2, dropout=0.0, context_len=4, prompt_len=3, max_ep_len=20)


def _filled(init: Callable[[], Any]) -> Any:
    """Params of ``init``'s structure (not run: traced only), each leaf distinct values."""
    shapes = jax.eval_shape(init)
    return jax.tree.map(lambda s: (np.arange(np.prod(s.shape)) % 97 / 7).reshape(s.shape).astype(s.dtype), shapes)


def _actor_critic(obs: int = 3, actions: int = 2) -> tuple[Any, Any]:
    policy = ActorCriticPolicy.for_shapes(ppo.PPOConfig(hidden=(4,)), obs_shape=(obs,), num_actions=actions)
    return policy, _filled(lambda: policy.init(jax.random.PRNGKey(1)))


def _dqn() -> tuple[dqn.DQNPolicy, Any]:
    policy = dqn.DQNPolicy(obs_shape=(3,), num_actions=2, action_dtype="int32", hidden=(4,))
    return policy, _filled(lambda: policy.init(jax.random.PRNGKey(2)))


def _traffic(policy: Any, params: Any) -> TrainedAgent:
    log = pd.DataFrame({"env_steps": [1, 2], "episode_return": [0.5, 1.0]})
    return TrainedAgent("a", "s", False, policy, params, log, train_seconds=1.0, sim_seconds=2.0)


def _write_actor_critic(path: Path) -> Any:
    policy, params = _actor_critic()
    onpolicy_io.write_policy(path, policy, params, extra={"note": 1})
    return params


def _write_offpolicy(path: Path) -> Any:
    policy, params = _dqn()
    offpolicy_io.save_policy(path, TrainResult(policy, params, {}, 0.0, 1))
    return params


def _write_committee(path: Path) -> Any:
    policy, params = _dqn()
    stacked = jax.tree.map(lambda x: np.stack([x, x + 1]), params)
    splitfl.save_committee(path, splitfl.Committee(policy, stacked))
    return stacked


def _write_traffic_dqn(path: Path) -> Any:
    policy, params = _dqn()
    _traffic(policy, params).save(path)
    return params


def _write_traffic_ppo(path: Path) -> Any:
    policy, params = _actor_critic()
    _traffic(policy, params).save(path)
    return params


def _write_prompt_dt(path: Path) -> Any:
    params = _filled(lambda: init_params(TINY_DT, jax.random.PRNGKey(3)))
    dt_saved.save_params(path, params, TINY_DT, use_prompt=True)
    return params


def _write_expert(path: Path) -> Any:
    policy, params = _actor_critic()
    experts.save_expert(path, TrainResult(policy, params, {}, 0.0, 5), TRAINING_TASKS[0])
    return params


def _write_planner(path: Path) -> Any:
    policy, params = _actor_critic(N_FEATURES, 2 * MAX_OPTIONS)
    wealth_planner.write_planner(path, wealth_planner.Planner(policy, params), {"problems": 3})
    return params


# name -> (its writer, the kind it writes, a key of its description, the domain's reader)
WRITERS: dict[str, tuple[Callable[[Path], Any], str, str, Callable[[Path], Any]]] = {
    "actor_critic": (_write_actor_critic, AC_KIND, "policy", onpolicy_io.load_policy),
    "offpolicy": (_write_offpolicy, OFF_KIND, "kind", dqn.load_policy),
    "committee": (_write_committee, splitfl.COMMITTEE_FORMAT, "members", splitfl.load_committee),
    "traffic_dqn": (_write_traffic_dqn, OFF_KIND, "traffic_agent", TrainedAgent.load),
    "traffic_ppo": (_write_traffic_ppo, AC_KIND, "traffic_agent", TrainedAgent.load),
    "prompt_dt": (_write_prompt_dt, dt_saved.MODEL_KIND, "config", dt_saved.load_params),
    "expert": (_write_expert, AC_KIND, "comp_format", experts.load_expert),
    "planner": (_write_planner, AC_KIND, "training", wealth_planner.load_planner),
}


def _like(tree: Any) -> Callable[[dict[str, Any]], Any]:
    return lambda description: jax.tree.map(lambda x: jax.ShapeDtypeStruct(np.shape(x), np.asarray(x).dtype), tree)


@pytest.mark.parametrize("name", list(WRITERS))
def test_every_writer_writes_its_versioned_kind_read_back_by_load_trained(name: str, tmp_path: Path) -> None:
    write, kind, key, read = WRITERS[name]
    path = tmp_path / f"{name}.msgpack"
    params = write(path)
    stored = params if name != "prompt_dt" else jax.tree.map(lambda x: np.asarray(x, np.float32), params)
    description, loaded = load_trained(path, kind=kind, target=_like(stored))
    assert key in description and "format" not in description
    for a, b in zip(jax.tree.leaves(stored), jax.tree.leaves(loaded), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    read(path)  # the domain's reader reads it too
    name_, _, version = kind.rpartition("/")
    problem = rf"{name}\.msgpack has format version '{version}'; this version reads '{int(version) + 1}'"
    with pytest.raises(InputError, match=rf"^policy: .*{problem}") as err:
        load_trained(path, kind=f"{name_}/{int(version) + 1}", target=_like(stored), field="policy")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("name", list(WRITERS))
def test_a_reader_given_another_kind_or_version_is_one_input_error_line(name: str, tmp_path: Path) -> None:
    write, kind, _, read = WRITERS[name]
    other = tmp_path / "other.msgpack"
    save_pytree(other, {"w": np.zeros(2)}, metadata={"format": "decisions.other.thing/1", "policy": {}})
    with pytest.raises(InputError, match=r"other\.msgpack holds 'decisions\.other\.thing/1'") as err:
        read(other)
    assert "\n" not in str(err.value)
    newer = tmp_path / "newer.msgpack"
    name_, _, version = kind.rpartition("/")
    save_pytree(newer, {"w": np.zeros(2)}, metadata={"format": f"{name_}/{int(version) + 7}"})
    with pytest.raises(InputError, match=rf"newer\.msgpack has format version '{int(version) + 7}'") as err:
        read(newer)
    assert "\n" not in str(err.value)


def test_a_policy_file_of_another_agent_names_what_it_holds(tmp_path: Path) -> None:
    path = tmp_path / "dqn.msgpack"
    _write_offpolicy(path)
    with pytest.raises(InputError, match=r"^agent.path: .*dqn\.msgpack holds 'decisions\.offpolicy_policy/1'"):
        splitfl.load_committee(path)
    with pytest.raises(InputError, match=r"^policy: .*dqn\.msgpack holds .*not a saved actor-critic policy"):
        onpolicy_io.load_policy(path)
    with pytest.raises(InputError, match="not a traffic agent"):
        TrainedAgent.load(path)


def test_prompt_dt_version_1_files_load_and_new_files_are_version_2(tmp_path: Path) -> None:
    """Version 1: ``{"kind": V1_TAG}`` instead of a kind tag; its description is version 2's."""
    params = _filled(lambda: init_params(TINY_DT, jax.random.PRNGKey(4)))
    old, new = tmp_path / "v1.msgpack", tmp_path / "v2.msgpack"
    meta = {"kind": dt_saved.V1_TAG, "config": TINY_DT.to_dict(), "weights_dtype": "float32", "use_prompt": False}
    save_pytree(old, params, metadata=meta)
    dt_saved.save_params(new, params, TINY_DT, use_prompt=False)
    (p1, c1, d1), (p2, c2, d2) = dt_saved.read_model(old), dt_saved.read_model(new)
    assert c1 == c2 == TINY_DT and d1 == d2 == {"config": TINY_DT.to_dict(), "weights_dtype": "float32", "use_prompt": False}
    for a, b in zip(jax.tree.leaves(p1), jax.tree.leaves(p2), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    kinds = {dt_saved.MODEL_KIND: dt_saved._stored_params, dt_saved.MODEL_KIND_V1: dt_saved._stored_params}
    assert read_trained(new, kinds=kinds).kind == "decisions.telecom.comp.promptdt/2"
    assert read_trained(old, kinds=kinds, untagged=dt_saved._version_1).kind == "decisions.telecom.comp.promptdt/1"
    save_pytree(old, params, metadata={**meta, "kind": "decisions.telecom.comp.other"})
    with pytest.raises(InputError, match=r"^model: .*v1\.msgpack records no kind .*not a Prompt-DT checkpoint"):
        dt_saved.load_params(old)
    save_pytree(old, params, metadata={"format": "decisions.telecom.comp.promptdt/3", "config": TINY_DT.to_dict()})
    with pytest.raises(InputError, match=r"has format version '3'; this version reads '2' or '1'"):
        dt_saved.load_params(old)


def _digest(tree: Any) -> str:
    """Leaf names, dtypes, shapes and bytes of a pytree, hashed."""
    h = hashlib.sha256()
    for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
        a = np.asarray(leaf)
        for part in (jax.tree_util.keystr(path), str(a.dtype), str(a.shape)):
            h.update(part.encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


# the params of one shipped file of each kind and layout, as the loaders gave them before one protocol
SHIPPED = {
    "data/comp/trained/experts/c3-u5-rate_fair-s1.msgpack": "c25bb96a3017e6c9",
    "data/comp/trained/models/multitask_ppo.msgpack": "d4f9c4b445855b2d",
    "data/comp/trained/models/dt.msgpack": "901b5c80f605e093",
    "data/comp/trained_joint/models/dagger/promptdt-small-r0.msgpack": "5afd4f40ab41af82",
    "decisions/finance/wealth/planner.msgpack": "d9decf7ddfc257be",
    "decisions/finance/wealth/planner_ppo.msgpack": "837da58b45924298",
}


@pytest.mark.parametrize("relative", list(SHIPPED))
def test_shipped_models_load_unchanged(relative: str) -> None:
    path = ROOT / relative
    if not path.is_file():
        pytest.skip(f"{relative} is not in this checkout")
    if "/experts/" in relative or "multitask_ppo" in relative:
        _, params, _ = experts.load_expert(path)
    elif "/comp/" in relative:
        saved = dt_saved.SavedDT.load(path)
        assert saved.use_prompt == ("promptdt" in relative)
        params = saved.params
    else:
        params = wealth_planner.load_planner(path).params
    assert _digest(params) == SHIPPED[relative]
