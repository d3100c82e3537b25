"""Pension asset-liability management trained with SNAPO.

Modules, one job each:

- ``scenario``: validated user input (pydantic; errors name the field);
- ``params``: the traced ``PensionParams`` pytree, the ``inputs`` of every sensitivity;
- ``curve``: key-rate zero curve, Nelson-Siegel factor shocks, OU factors;
- ``liabilities``: Gompertz-Makeham survival, projected benefits, payroll, bucketed discounting;
- ``assets``: cash and bond buckets priced on the simulated curve, correlated lognormal assets;
- ``policy``: the allocation network (and the fixed mix as the same network with its state gate closed);
- ``simulator``: the monthly ``lax.scan`` over vmapped paths and the objective;
- ``snapo_policy``: train / evaluate / sensitivities / save / load;
- ``sensitivity``: the gradient to every input as a pytree and as tidy tables;
- ``baselines``: the fixed-mix search;
- ``valuation``: PV, key-rate durations, DV01, duration and convexity of any cash flows;
- ``report`` and ``job``: the tables the app charts and the batch job;
- ``bench``: the measured figures (``python -m decisions.finance.pension.bench``).
"""
