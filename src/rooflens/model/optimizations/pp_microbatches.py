"""`pp-microbatches:n=M`: how many micro-batches a pipeline-parallel batch is cut into.

With `--pp N` the B sequences run as M micro-batches of B/M through N stages
(model/predict/pp_schedule.py): M = 1 leaves N − 1 of N stages idle at any moment (the bubble),
M ≥ N keeps every stage busy in decode; prefill's bubble share is (N − 1)/(M + N − 1) (GPipe,
Huang et al. 2019). The default (n = 0) is M = min(N, B); larger M shrinks each micro-batch's
GEMMs and so their efficiency at prefill. No effect without `--pp`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rooflens.model.optimizations.base import Optimization, Param
from rooflens.model.predict.scenario import with_applied

if TYPE_CHECKING:
    from rooflens.model.predict.scenario import Scenario


class PPMicrobatches(Optimization):
    name = "pp-microbatches"
    summary = "pipeline parallelism: micro-batches per batch (bubble (N−1)/(M+N−1))"
    citation = "Huang et al. 2019 GPipe; Narayanan et al. 2021 Megatron-LM PP"
    order = 3
    params: ClassVar[dict[str, Param]] = {
        "n": Param(int, 0, "micro-batches M (0 = min(pp, batch))", lo=0),
    }

    def scenario(self, sc: Scenario) -> Scenario:
        if not self["n"]:
            return sc
        return with_applied(sc, pp_microbatches=self["n"])
