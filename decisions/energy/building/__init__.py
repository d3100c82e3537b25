"""Home and district batteries on the CityLearn Challenge 2022 data (17 homes with PV, one year, hourly).

Modules, one job each:

- ``dataset``: ``load_district()``, the packaged data as typed arrays (``data/``, derived by ``derive``);
- ``scenario``: the validated ``Scenario`` (homes, battery overrides, tariff, split, reward);
  ``tariff``: the dynamic price and user price CSVs; ``windows``: splits, episode starts, windows;
- ``params``: ``to_params`` / ``per_building_params``, the traced ``BuildingParams``;
- ``battery``: one hour of battery physics; ``observation``: feature order, names and scales;
- ``env``: ``BuildingEnv`` (one home, or several behind one meter);
- ``simulate``: ``simulate`` / ``simulate_actions``, the one scorer, and ``Trajectory``;
- ``baselines``: no battery and rule-based controllers; ``optimum``: the perfect-foresight LP;
  ``mpc``: 24 h rolling LP; ``evaluation``: ``run_baselines`` / ``evaluate``;
- ``kpis``: CityLearn KPIs relative to no battery; ``bench``: measured figures.

Typical use::

    scenario = Scenario.parse({"buildings": 5})                  # or "district", [1, 2, 3]
    env, params = BuildingEnv.from_scenario(scenario, "train")   # train an agent on these
    table = evaluate(scenario, {"ppo": agent_controller(result.policy, result.params)})
"""
