"""Domain-free explanations of a learned policy (explainable RL).

Everything takes a JAX-traceable ``action_fn(obs (F,)) -> action () or (A,)`` (the
deterministic policy with its parameters closed over), a batch of visited states
``(N, F)`` and ``feature_names``; optional ``groups`` (name -> feature names) report
several features as one; ``output`` picks the component of a vector action to explain.
Results are tidy pandas frames; plots are matplotlib Figures.

* Global: :func:`permutation_importance` (shuffle a feature, measure the action change
  and optionally a score drop) and :func:`ig_importance` (mean |integrated gradients|).
* Local: :func:`explain_decision` (integrated gradients with a completeness check, and
  gradient x input) for one observation.
* Sensitivity: :func:`feature_gradients`, :func:`sensitivity_summary`, :func:`response_curve`.
* Rules: :func:`fit_surrogate` -> :class:`SurrogateTree` with ``rules``, ``fidelity`` and
  ``decision_path(x)`` / ``explain(x)`` for "why did it do that?".
* Plots: :func:`plot_importance`, :func:`plot_attribution`, :func:`plot_response_curve`,
  :func:`plot_surrogate_tree`.

Discrete policies: gradient methods need a differentiable scalar, so pass
``expected_action(logits_fn, levels)`` (the expected level under the softmax) or a
function returning probabilities with ``output=k`` (why level ``k`` is likely). The
surrogate tree and permutation importance take logits directly with ``discrete=True``
(their argmax is the decision).

Example::

    names = ["hour_sin", "soc", "price", "price_6h"]
    act = lambda x: jnp.tanh(x @ w + b)          # params closed over
    imp = ig_importance(act, obs, names, groups={"price": ["price", "price_6h"]})
    why = explain_decision(act, obs[18], names, observations=obs)
    tree = fit_surrogate(act, obs, names, max_depth=4)
    print(tree.explain(obs[18]))                   # "price_6h > 0.45 and soc <= 0.3 -> action -0.8"
"""

from decisions.core.explain._inputs import ActionFn, Groups, expected_action, make_baseline
from decisions.core.explain.attributions import (
    LocalAttribution,
    explain_decision,
    gradient_x_input,
    ig_importance,
    integrated_gradients,
)
from decisions.core.explain.permutation import ScoreFn, permutation_importance
from decisions.core.explain.plots import (
    plot_attribution,
    plot_importance,
    plot_response_curve,
    plot_surrogate_tree,
)
from decisions.core.explain.sensitivity import feature_gradients, response_curve, sensitivity_summary
from decisions.core.explain.surrogate import SurrogateFidelity, SurrogateTree, fit_surrogate

__all__ = [
    "ActionFn",
    "Groups",
    "LocalAttribution",
    "ScoreFn",
    "SurrogateFidelity",
    "SurrogateTree",
    "expected_action",
    "explain_decision",
    "feature_gradients",
    "fit_surrogate",
    "gradient_x_input",
    "ig_importance",
    "integrated_gradients",
    "make_baseline",
    "permutation_importance",
    "plot_attribution",
    "plot_importance",
    "plot_response_curve",
    "plot_surrogate_tree",
    "response_curve",
    "sensitivity_summary",
]
