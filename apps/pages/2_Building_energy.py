"""Building energy page: RL battery controllers against the perfect-foresight LP, week by week, explained.

Pick a recorded ``building`` run (``?run=<id>`` opens one) or start a small one with the form:
the run goes through the domain's ``execute`` (``decisions.energy.building``), so it is recorded in
the run store like a CLI run, and the page reads its tables back. The sections are drawn by
``building_views`` (Streamlit) from ``building_data`` (the run's tables) and ``building_charts``.
"""

from __future__ import annotations

import app_common
import app_login
import building_views

from decisions.energy.building import DOMAIN
from decisions.store.who import acting_as

url = app_common.page_header(
    DOMAIN,
    ":material/home_work:",
    "Battery control for CityLearn homes: RL agents (PPO, A2C, SAC, DQN; several seeds) trained on "
    "the training months and scored on the held-out months against no battery, a rule-based "
    "controller and the perfect-foresight LP. Pick a week to see load, PV, price, the battery and its "
    "state of charge against the LP optimum, and ask the explanation panel why the agent acted as it did."
)

with acting_as(app_login.current().name):  # the session's user, named by every write below
    building_views.new_run_form(url, expanded=not building_views.has_runs(url))
    run_id = building_views.select_run(url)
    run = None if run_id is None else building_views.open_run(run_id, url)
    if run is not None:
        building_views.show_run(run, url)
