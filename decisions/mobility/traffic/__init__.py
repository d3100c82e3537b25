"""Traffic-signal control for vehicles and pedestrians on SUMO through sumo-rl.

Importing this package points ``SUMO_HOME`` at the installed SUMO wheel and selects libsumo
(:func:`sumo_setup.ensure_sumo`), so its modules can import ``sumo_rl``, ``traci`` and
``sumolib`` directly. Modules:

- :mod:`.sumo_setup`: SUMO_HOME, libsumo, binaries;
- :mod:`.scenarios`: the scenario registry and pedestrian networks (netconvert, cached);
- :mod:`.demand`: held-out demand draws and pedestrian flows;
- :mod:`.metrics`: delays, waits, fairness and throughput from tripinfo output;
- :mod:`.env`: sumo-rl environments with a vehicle + pedestrian observation, fair rewards and
  action masks;
- :mod:`.controllers`: fixed-time, Webster, actuated, max-pressure and greedy baselines;
- :mod:`.simulate`: one episode per spawned process, and a pool of them;
- :mod:`.survey`: the baselines on the scenarios (``python -m decisions.mobility.traffic.survey``).
"""

from decisions.mobility.traffic.sumo_setup import ensure_sumo

ensure_sumo()
