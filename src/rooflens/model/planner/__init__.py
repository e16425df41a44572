"""Capacity planner (`rooflens plan`): serving workload -> vectorised sweep of hardware and
settings -> feasible set, cheapest configuration (or most goodput per dollar), Pareto frontier
-> simulation check -> report.

workload.py (load, lengths, SLOs), trace.py (request traces), prices.py (+ prices.yaml),
curves.py (per-group step costs, with the optimizations' vectorised step-structure hooks),
kv_tiers.py (+ kv_tiers.yaml: prefix cache, KV offload tiers), profile.py (serving profiles
fitted by `validate serve --fit`), serving.py (steady-state schedulers), sweep.py (the space
and the loop over groups), grid.py (one group's grid, classification, goodput), mixed.py
(mixed-GPU prefill/decode pairs), pareto.py, costs.py + sim.py (discrete-event simulation and
replay), check.py (the cheapest configuration that passes both checks), explain.py, plan.py
(orchestration, recheck), plan_args.py + plan_lists.py (CLI values), report.py, commands.py
(`rooflens plan`).
"""
