"""Capacity planner (`rooflens plan`): serving workload -> vectorised sweep of hardware and
settings -> feasible set, cheapest configuration, Pareto frontier -> simulation check -> report.

workload.py (load, lengths, SLOs), prices.py (+ prices.yaml), curves.py (per-group step costs),
serving.py (steady-state schedulers), sweep.py (the grid), pareto.py, sim.py (discrete-event
check), explain.py, plan.py (orchestration, recheck), request.py (CLI values), report.py.
"""
