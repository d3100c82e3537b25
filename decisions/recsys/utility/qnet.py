"""The one-step Q-network: expected outcomes of each utility-weight vector given the request's context."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import Array

from decisions.core.nets import MLP
from decisions.recsys.utility import objectives as obj
from decisions.recsys.utility.logs import Logs
from decisions.recsys.utility.spec import QNetSettings

Params = Any


class TwoTower(nn.Module):
    """``Q_m(x, a) = [phi(x), 1] . psi_m(a)`` for ``outputs`` values m."""

    hidden: tuple[int, ...]
    embedding: int
    outputs: int

    def setup(self) -> None:
        """The context and action towers."""
        self.context_tower = MLP(self.hidden, self.embedding, activation=nn.relu, final_activation=nn.relu)
        self.action_tower = MLP(self.hidden[-1:], (self.embedding + 1) * self.outputs, activation=nn.relu)

    def embed_context(self, context: Array) -> Array:
        """(..., d) -> (..., E + 1) context embedding with the constant unit."""
        phi = self.context_tower(context)
        return jnp.concatenate([phi, jnp.ones(phi.shape[:-1] + (1,), phi.dtype)], axis=-1)

    def embed_actions(self, actions: Array) -> Array:
        """(A, k) action features -> (A, E + 1, outputs)."""
        return self.action_tower(actions).reshape(actions.shape[0], self.embedding + 1, self.outputs)

    def __call__(self, context: Array, actions: Array) -> Array:
        """Q for every request and action: (n, d), (A, k) -> (n, A, outputs)."""
        return jnp.einsum("ne,aem->nam", self.embed_context(context), self.embed_actions(actions))

    def logged(self, context: Array, actions: Array) -> Array:
        """Q of each request's own action: (n, d), (n, k) -> (n, outputs)."""
        return jnp.einsum("ne,nem->nm", self.embed_context(context), self.embed_actions(actions))


class QModel(NamedTuple):
    """A trained Q-network with what it needs to decide: normalisation, action set, scales."""

    params: Params
    context_mean: Array
    context_scale: Array
    target_mean: Array
    target_scale: Array
    weights: Array
    """(A, 3) the action set."""
    scales: Array
    """(2,) objective scales of the scalarisation."""
    hide_cost: float
    hidden: tuple[int, ...]
    embedding: int
    conditioning: str
    members: int = 1
    """Networks in the ensemble (their parameters stacked on a leading axis when more than one)."""

    @property
    def network(self) -> TwoTower:
        """The module (structure only)."""
        return TwoTower(self.hidden, self.embedding, 3 if self.conditioning == "vector" else 1)


def action_features(weights: Array, lam: Array | None = None) -> Array:
    """The action tower's input: the weight vector (and lam, broadcast, for the ``lambda`` conditioning)."""
    if lam is None:
        return weights
    return jnp.concatenate([weights, _lambda_column(lam, weights)], axis=-1)


def context_features(context: Array, lam: Array | None = None) -> Array:
    """The context tower's input (with lam appended for the ``lambda`` conditioning)."""
    if lam is None:
        return context
    return jnp.concatenate([context, _lambda_column(lam, context)], axis=-1)


def _lambda_column(lam: Array, like: Array) -> Array:
    """lam (a scalar, or one per row of ``like``) as a column beside ``like``'s features."""
    lam = jnp.asarray(lam, like.dtype)
    if lam.ndim == like.ndim - 1 and lam.ndim > 0:
        lam = lam[..., None]
    return jnp.broadcast_to(lam, like.shape[:-1] + (1,))


def _apply(model: QModel, context: Array, actions: Array) -> Array:
    """The network (the ensemble's mean) on standardised inputs: (n, d), (A, k) -> (n, A, outputs)."""
    if model.members == 1:
        return model.network.apply(model.params, context, actions)
    return jax.vmap(lambda params: model.network.apply(params, context, actions))(model.params).mean(axis=0)


def predict_outcomes(model: QModel, context: Array) -> Array:
    """Predicted (success, hides, revenue) of every action: (n, d) -> (n, A, 3) (``vector`` models)."""
    x = (context - model.context_mean) / model.context_scale
    return _apply(model, x, model.weights) * model.target_scale + model.target_mean


def action_values(model: QModel, context: Array) -> Array:
    """Predicted objectives (engagement, revenue) of every action: (n, A, 2) (``vector`` models)."""
    return obj.objectives(predict_outcomes(model, context), model.hide_cost)


def utilities(model: QModel, context: Array, lam: Array | float, scalarisation: str = "linear") -> Array:
    """Scalarised value of every action for each request: (n, A)."""
    if model.conditioning == "lambda":
        if scalarisation != "linear":
            raise ValueError("a lambda-conditioned Q-network learns the linear scalarisation only")
        x = (context - model.context_mean) / model.context_scale
        lam = jnp.asarray(lam, jnp.float32)
        return _apply(model, context_features(x, lam), action_features(model.weights, lam))[..., 0]
    return obj.scalarise(action_values(model, context), lam, model.scales, scalarisation)


def decide(model: QModel, context: Array, lam: Array | float, scalarisation: str = "linear") -> Array:
    """The greedy weight vector's index for each request: (n,)."""
    return jnp.argmax(utilities(model, context, lam, scalarisation), axis=-1)


def _targets(model: QModel, logs: Logs, key: Array) -> tuple[Array, Array, Array]:
    """Inputs and standardised regression targets of one pass (lam drawn per example when conditioned)."""
    x = (jnp.asarray(logs.context) - model.context_mean) / model.context_scale
    a = model.weights[jnp.asarray(logs.action)]
    y = (jnp.asarray(logs.reward) - model.target_mean) / model.target_scale
    if model.conditioning == "vector":
        return x, a, y
    lam = jax.random.uniform(key, (x.shape[0],))
    utility = obj.linear(obj.objectives(jnp.asarray(logs.reward), model.hide_cost), lam, model.scales)
    return context_features(x, lam), action_features(a, lam), utility[:, None]


def train(
    logs: Logs,
    validation: Logs,
    weights: np.ndarray,
    scales: obj.Scales,
    hide_cost: float,
    settings: QNetSettings,
    *,
    importance_weighted: bool = False,
    progress: Callable[[int, int], None] | None = None,
    warm_start: QModel | None = None,
) -> tuple[QModel, dict[str, float]]:
    """Fit the Q-network (``settings.ensemble`` of them, seeds ``seed``, ``seed + 1``, ...) on ``logs``.

    Each member is fitted by ``_train_member``; an ensemble's decisions use the mean of its members'
    predictions, which steadies the greedy choices a single network's seed would sway.

    Returns:
        The model and its training figures (``train_loss``, ``validation_loss``, ``best_step``: the
        members' means).
    """
    members = settings.ensemble
    template = _template(logs, weights, scales, hide_cost, settings, warm_start)
    fitted, figures = [], []
    for member in range(members):
        one = settings.model_copy(update={"seed": settings.seed + member})
        start = None
        if warm_start is not None:
            start = warm_start if warm_start.members == 1 else warm_start._replace(
                params=jax.tree.map(lambda x, m=member % warm_start.members: x[m], warm_start.params), members=1)
        model, figure = _train_member(
            logs, validation, template, one, importance_weighted,
            None if progress is None else (lambda done, total, m=member: progress(m * total + done, members * total)),
            start,
        )
        fitted.append(model)
        figures.append(figure)
    mean = {name: float(np.mean([f[name] for f in figures])) for name in figures[0]}
    if members == 1:
        return fitted[0], mean
    stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *(m.params for m in fitted))
    return fitted[0]._replace(params=stacked, members=members), mean


def _template(logs: Logs, weights: np.ndarray, scales: obj.Scales, hide_cost: float, settings: QNetSettings,
              warm_start: QModel | None) -> QModel:
    """A model without parameters: the input and target normalisation (from ``logs``, or ``warm_start``'s),
    the action set, the scales and the structure."""
    context = np.asarray(logs.context, np.float32)
    reward = np.asarray(logs.reward, np.float32)
    model = QModel(
        params=None,
        context_mean=jnp.asarray(context.mean(axis=0)),
        context_scale=jnp.asarray(np.maximum(context.std(axis=0), 1e-3)),
        target_mean=jnp.asarray(reward.mean(axis=0)),
        target_scale=jnp.asarray(np.maximum(reward.std(axis=0), 1e-3)),
        weights=jnp.asarray(weights, jnp.float32),
        scales=scales.array(),
        hide_cost=float(hide_cost),
        hidden=tuple(settings.hidden),
        embedding=settings.embedding,
        conditioning=settings.conditioning,
    )
    if warm_start is not None:
        model = model._replace(context_mean=warm_start.context_mean, context_scale=warm_start.context_scale,
                               target_mean=warm_start.target_mean, target_scale=warm_start.target_scale)
    return model


def _train_member(
    logs: Logs,
    validation: Logs,
    model: QModel,
    settings: QNetSettings,
    importance_weighted: bool,
    progress: Callable[[int, int], None] | None,
    warm_start: QModel | None,
) -> tuple[QModel, dict[str, float]]:
    """Fit one Q-network (``model``'s structure and normalisation) by minibatch regression on ``logs``,
    keeping the parameters of the best validation loss; ``warm_start`` (one member) gives the start."""
    context = np.asarray(logs.context, np.float32)
    key = jax.random.PRNGKey(settings.seed)
    k_init, k_train, k_val = jax.random.split(key, 3)
    inputs = _targets(model, logs, k_train)
    val_inputs = _targets(model, validation, k_val)
    sample_weight = jnp.ones(context.shape[0], jnp.float32)
    if importance_weighted:
        sample_weight = 1.0 / (model.weights.shape[0] * jnp.asarray(logs.propensity, jnp.float32))
        sample_weight = sample_weight / sample_weight.mean()
    network = model.network
    params = network.init(k_init, inputs[0][:2], inputs[1][:2], method=TwoTower.logged)
    if warm_start is not None:
        params = jax.tree.map(lambda new, old: jnp.asarray(old, new.dtype), params, warm_start.params)
    optimiser = optax.adam(settings.learning_rate)
    run_chunk = _chunk_runner(network, settings.learning_rate, settings.batch_size, settings.log_every)
    val_loss = _validation_loss(network)

    state = (params, optimiser.init(params))
    best = (float(val_loss(params, *val_inputs, jnp.ones(val_inputs[0].shape[0]))), params, 0)
    done, train_loss = 0, float("nan")
    while done < settings.steps:
        state, losses = run_chunk(state, jax.random.fold_in(k_train, done), inputs, sample_weight)
        done += settings.log_every
        train_loss = float(losses[-1])
        current = float(val_loss(state[0], *val_inputs, jnp.ones(val_inputs[0].shape[0])))
        if current < best[0]:
            best = (current, state[0], done)
        if progress is not None:
            progress(min(done, settings.steps), settings.steps)
    return model._replace(params=best[1]), {
        "train_loss": train_loss, "validation_loss": best[0], "best_step": float(best[2]),
    }


def _loss(network: TwoTower, params: Params, x: Array, a: Array, y: Array, weight: Array) -> Array:
    """Weighted mean squared error of the logged actions' predictions."""
    error = network.apply(params, x, a, method=TwoTower.logged) - y
    return jnp.mean(weight * jnp.sum(error**2, axis=-1))


@functools.cache
def _validation_loss(network: TwoTower) -> Callable:
    """The jitted unweighted loss of a network structure (one compile for every member and retraining)."""
    return jax.jit(functools.partial(_loss, network))


@functools.cache
def _chunk_runner(network: TwoTower, learning_rate: float, batch: int, steps: int) -> Callable:
    """A jitted run of ``steps`` Adam steps on random minibatches (cached: one compile per structure)."""
    optimiser = optax.adam(learning_rate)

    @jax.jit
    def run(state: tuple[Params, Any], key: Array, inputs: tuple[Array, Array, Array], weight: Array):
        n = inputs[0].shape[0]

        def step(carry: tuple[Params, Any], k: Array) -> tuple[tuple[Params, Any], Array]:
            params, opt_state = carry
            rows = jax.random.randint(k, (batch,), 0, n)
            x, a, y = (part[rows] for part in inputs)
            loss, grads = jax.value_and_grad(functools.partial(_loss, network))(params, x, a, y, weight[rows])
            updates, opt_state = optimiser.update(grads, opt_state, params)
            return (optax.apply_updates(params, updates), opt_state), loss

        return jax.lax.scan(step, state, jax.random.split(key, steps))

    return run


MODEL_KIND = "decisions.recsys.utility.qnet/1"
"""Kind tag of a saved Q-network (``save_model`` / ``load_model``)."""
_ARRAYS = ("params", "context_mean", "context_scale", "target_mean", "target_scale", "weights", "scales")


def save_model(path: Any, model: QModel) -> None:
    """Write a trained Q-network (parameters, normalisation, action set) as msgpack."""
    from decisions.core.checkpoint import save_trained

    description = {"hide_cost": model.hide_cost, "hidden": list(model.hidden), "embedding": model.embedding,
                   "conditioning": model.conditioning, "actions": int(model.weights.shape[0]),
                   "context_dim": int(model.context_mean.shape[0]), "members": model.members}
    save_trained(path, kind=MODEL_KIND, description=description,
                 params={name: getattr(model, name) for name in _ARRAYS})


def load_model(path: Any) -> QModel:
    """Read a Q-network written by ``save_model`` (``InputError`` naming the file when it is not one)."""
    from decisions.core.checkpoint import load_trained

    def target(description: dict[str, Any]) -> dict[str, Any]:
        hidden = tuple(int(h) for h in description["hidden"])
        conditioning = str(description["conditioning"])
        extra = 0 if conditioning == "vector" else 1
        d, actions = int(description["context_dim"]), int(description["actions"])
        network = TwoTower(hidden, int(description["embedding"]), 3 if conditioning == "vector" else 1)
        params = network.init(jax.random.PRNGKey(0), jnp.zeros((1, d + extra)), jnp.zeros((1, 3 + extra)),
                              method=TwoTower.logged)
        members = int(description.get("members", 1))
        if members > 1:
            params = jax.tree.map(lambda x: jnp.stack([x] * members), params)
        return {"params": params, "context_mean": jnp.zeros(d), "context_scale": jnp.zeros(d),
                "target_mean": jnp.zeros(3), "target_scale": jnp.zeros(3), "weights": jnp.zeros((actions, 3)),
                "scales": jnp.zeros(2)}

    description, arrays = load_trained(path, kind=MODEL_KIND, target=target, field="model")
    return QModel(**arrays, hide_cost=float(description["hide_cost"]),
                  hidden=tuple(int(h) for h in description["hidden"]), embedding=int(description["embedding"]),
                  conditioning=str(description["conditioning"]), members=int(description.get("members", 1)))
