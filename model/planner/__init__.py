"""Capacity planner (`rooflens plan`): serving workload -> vectorised sweep of hardware and
settings -> feasible set, cheapest configuration, Pareto frontier -> simulation check -> report.

workload.py (load, lengths, SLOs), prices.py (+ prices.yaml), curves.py (per-group step costs,
with the optimizations' vectorised step-structure hooks), serving.py (steady-state schedulers),
sweep.py (the grid), pareto.py, sim.py (discrete-event simulation), check.py (the cheapest
configuration that passes both checks), explain.py, plan.py (orchestration, recheck),
request.py (CLI values), report.py, commands.py (`rooflens plan`).
"""
