"""`moe:capacity_factor=C,imbalance=I,hierarchical=BOOL`: the routing side of mixture of experts.

What the base table already charges (model/ops/table.py `moe`): only k of E experts' FLOPs per token
(active vs total parameters), and at decode the weights of the E·(1 − (1 − k/E)^(B·T)) distinct
experts the batch touches (balls into bins: k at batch 1, all E at large batch); under `--ep` the
all-to-all dispatch and combine. This optimization adds what routing skew and capacity do:

- Expert capacity (GShard, Lepikhin et al. 2020; anchors E12): each expert takes at most
  c = round(C · k · tokens / E) tokens per step; C = 0 means dropless (Mixtral in vLLM,
  MegaBlocks). Tokens over capacity are dropped (they skip the expert, a quality cost).
- Skew: the busiest expert receives I times the mean load μ = k·tokens/E and the other E − 1
  share the rest, (E − I)/(E − 1)·μ each (I = 1 is perfect balance, I ≤ E/k). Dropped tokens:
  max(0, I·μ − c) + (E − 1)·max(0, (E − I)/(E − 1)·μ − c).
- Under expert parallelism the step waits for the GPU holding the busiest expert: its load is
  min(I, C)·μ + (E/ep − 1)·min((E − I)/(E − 1), C)·μ against the mean (E/ep)·μ, and that ratio
  scales its experts' FLOPs and activation bytes (with tensor parallelism every GPU holds a
  slice of every expert, so skew costs nothing there).
- `hierarchical`: EP all-to-alls go intra-node first, then across nodes: (g − 1) + (m − 1)
  hops instead of n − 1 (DeepSpeed-MoE, Rajbhandari et al. 2022 §5.3; model/pricing/comm.py).

Neutral settings (C = 0, I = 1, flat) change nothing. Limits: one hot expert stands in for the
real load distribution; dropped tokens still cost their router and attention work.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from rooflens.hardware.errors import RooflensError
from rooflens.model.ops.op import Num, Op
from rooflens.model.optimizations.base import Optimization, Param
from rooflens.model.predict.steps import Prediction, Step, StepPricer

if TYPE_CHECKING:
    from rooflens.model.predict.scenario import Scenario


def expert_capacity(capacity_factor: Num, k: int, tokens: Num, n_experts: int) -> Num:
    """round(C · k · tokens / E) tokens per expert (Lil'Log, MoE section; anchors E12),
    rounding halves up."""
    return np.floor(capacity_factor * k * np.asarray(tokens, dtype=np.float64) / n_experts + 0.5)


def dropped_tokens(capacity_factor: float, imbalance: float, k: int, tokens: Num, E: int) -> Num:
    """Expert assignments over capacity per MoE layer under the one-hot-expert skew."""
    mean = k * np.asarray(tokens, dtype=np.float64) / E
    if capacity_factor <= 0:
        return 0.0 * mean
    cap = expert_capacity(capacity_factor, k, tokens, E)
    rest = (E - imbalance) / (E - 1) * mean if E > 1 else 0.0 * mean
    return np.maximum(0.0, imbalance * mean - cap) + (E - 1) * np.maximum(0.0, rest - cap)


def busiest_gpu_load(capacity_factor: float, imbalance: float, E: int, ep: int) -> float:
    """Load of the GPU holding the hot expert over the mean GPU load, under EP."""
    cap = capacity_factor if capacity_factor > 0 else np.inf
    rest = (E - imbalance) / (E - 1) if E > 1 else 0.0
    local = E // ep
    return float((min(imbalance, cap) + (local - 1) * min(rest, cap)) / local)


class MoE(Optimization):
    name = "moe"
    summary = "MoE routing: expert capacity, dropped tokens, EP load skew, hierarchical all-to-all"
    citation = "Lepikhin 2021 GShard; Fedus 2022 Switch; Rajbhandari 2022 DeepSpeed-MoE"
    order = 40  # table transform on moe.experts and ep.* ops
    params: ClassVar[dict[str, Param]] = {
        "capacity_factor": Param(float, 0.0, "expert capacity factor C (0 = dropless)", lo=0),
        "imbalance": Param(float, 1.0, "busiest expert's load over the mean (I ≥ 1)", lo=1),
        "hierarchical": Param(bool, False, "hierarchical (intra-node first) EP all-to-all"),
    }

    def scenario(self, sc: Scenario) -> Scenario:
        m = sc.model
        if not m.is_moe:
            raise RooflensError(f"--opt moe needs a mixture-of-experts model; {m.id} is dense")
        if self["imbalance"] > m.n_experts / m.experts_per_token:
            raise RooflensError(
                f"--opt moe: imbalance ≤ E/k = {m.n_experts / m.experts_per_token:g} "
                "(one expert cannot take more than every token)"
            )
        return sc

    def ops(self, ops: list[Op], sc: Scenario, step: Step) -> list[Op]:
        m, ep = sc.model, sc.parallel.ep
        load = busiest_gpu_load(self["capacity_factor"], self["imbalance"], m.n_experts, ep)
        out = []
        for op in ops:
            if op.name == "moe.experts" and ep > 1 and load != 1.0:
                op = op.scaled(flops=load, act_bytes=load, live_bytes=load)
            elif op.name.startswith("ep.") and self["hierarchical"]:
                op = replace(op, shape={**op.shape, "hierarchical": True})
            out.append(op)
        return out

    def result(self, pred: Prediction, sc: Scenario, pipeline: StepPricer) -> Prediction:
        m, w, ep = sc.model, sc.workload, sc.parallel.ep
        E, k, C, imb = m.n_experts, m.experts_per_token, self["capacity_factor"], self["imbalance"]
        routed = w.batch * (ep // sc.parallel.tp if ep > 1 else 1)
        parts = []
        for phase, tokens in (("prefill", routed * w.prompt_len), ("decode", routed)):
            dropped = float(dropped_tokens(C, imb, k, tokens, E))
            cap = f"capacity {float(expert_capacity(C, k, tokens, E)):g}" if C else "dropless"
            parts.append(
                f"{phase} {tokens:g} tokens: {cap}, {dropped:g} of {k * tokens:g} "
                f"assignments dropped per layer"
            )
        note = f"moe (E={E}, k={k}, C={C:g}, I={imb:g}): " + "; ".join(parts)
        if ep > 1:
            note += f"; busiest EP GPU at {busiest_gpu_load(C, imb, E, ep):.2f}x the mean load"
        return replace(pred, notes=[*pred.notes, note])
