"""`activation-sparsity:sparsity=X` (or `density=1−X`): skip the weight columns whose input
activation is zero for every token of the batch.

Mechanism ("Transformer inference tricks", effective-sparsity section; Liu et al. 2023,
"Deja Vu"). After a ReLU most MLP activations are exactly zero (≈ 90–95 % in OPT's MLPs, Li et
al. 2023, "The Lazy Neuron Phenomenon"). A GEMV whose input element k is zero need not load
column k of the weight. In a batch the column can be skipped only if the activation is zero for
all tokens; zeros fall independently per token, so with effective sparsity X per token and N
tokens the chance is X^N: the gain vanishes with batch.

Formulas, for each MLP down projection (the GEMM fed by the activation function), N = B·T:
    skipped = X^N;  weight bytes × (1 − X^N);  FLOPs × (1 − X^N)
e.g. X = 0.9: 90 % of the down weights at batch 1, 0.12 % at batch 64 (0.9^64).

Limits: only exact zeros are skipped (ReLU models; SwiGLU models have few, and need a predictor
as in Deja Vu, whose cost is not charged); the skip needs a custom GEMV (llama.cpp-style), not a
stock tensor-core GEMM; attention-output sparsity is not modelled.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from rooflens.hardware.errors import RooflensError
from rooflens.model.ops.op import Num, Op
from rooflens.model.optimizations.base import Optimization, Param
from rooflens.model.predict.steps import Step

if TYPE_CHECKING:
    from rooflens.model.predict.scenario import Scenario

DEFAULT_SPARSITY = 0.9  # OPT's ReLU MLPs: ~90 %+ zeros (Li et al. 2023, lazy neurons)


def skipped_fraction(sparsity: float, tokens: Num) -> Num:
    """Chance a weight column is unused by the whole batch: X^N (Transformer inference tricks)."""
    out = np.power(sparsity, np.asarray(tokens, dtype=np.float64))
    return float(out) if np.ndim(out) == 0 else out


class ActivationSparsity(Optimization):
    name = "activation-sparsity"
    summary = "skip weight columns whose activation is zero for the whole batch (X^N)"
    citation = "Transformer inference tricks (effective sparsity); Liu et al. 2023 Deja Vu"
    order = 42  # table transform
    params: ClassVar[dict[str, Param]] = {
        "sparsity": Param(
            float, None, "per-token chance an activation is zero, X (default 0.9)", lo=0, hi=1
        ),
        "density": Param(
            float, None, "per-token chance it is nonzero, 1 − X (alternative)", lo=0, hi=1
        ),
    }

    def check(self) -> None:
        if self["sparsity"] is not None and self["density"] is not None:
            raise RooflensError("--opt activation-sparsity: give sparsity or density, not both")

    @property
    def sparsity(self) -> float:
        if self["sparsity"] is not None:
            return float(self["sparsity"])
        if self["density"] is not None:
            return 1.0 - float(self["density"])
        return DEFAULT_SPARSITY

    def ops(self, ops: list[Op], sc: Scenario, step: Step) -> list[Op]:
        out = []
        for op in ops:
            if op.kind == "gemm" and op.name.endswith(".down") and "m" in op.shape:
                keep = 1.0 - skipped_fraction(self.sparsity, op.shape["m"])
                op = replace(
                    op,
                    flops=op.flops * keep,
                    weight_bytes=op.weight_bytes * keep,
                    vector_flops=op.vector_flops * keep,
                    shape={**op.shape, "skipped_columns": 1.0 - keep},
                )
            out.append(op)
        return out
