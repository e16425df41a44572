"""`distill:student=MODEL` or `distill:layers=F`: knowledge distillation as a model swap.

Mechanism (Hinton et al. 2015; Sanh et al. 2019, DistilBERT): a smaller student is trained to
match the teacher's outputs; at inference only the student runs, so its cost is simply the
cost of a smaller model. Two ways to name the student:
- `student=MODEL`: any preset id or spec file (e.g. llama-3-8b for llama-3-70b);
- `layers=F`: the teacher's architecture with a share F of its layers (DistilBERT keeps every
  other layer of BERT: F = 0.5, same width, same vocabulary). The parameter saving is then
  1 − (V·D + P·D + F·L·layer) / (V·D + P·D + L·layer): with BERT-base's 12 layers of
  12·D² + 13·D and its 23.8 M embedding parameters that is 39 % (DistilBERT: "40% smaller").
The result notes parameters before and after. layers = 1 with no student is the identity.
Limits: accuracy is not modelled; the student keeps the teacher's precision and parallelism.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar

from rooflens.hardware.errors import RooflensError
from rooflens.model.optimizations._swap import with_model
from rooflens.model.optimizations.base import Optimization, Param
from rooflens.model.predict.scenario import with_applied
from rooflens.model.predict.steps import Prediction, StepPricer
from rooflens.model.specs.params import count_params
from rooflens.model.specs.presets import get_model
from rooflens.model.specs.spec import ModelSpec

if TYPE_CHECKING:
    from rooflens.model.predict.scenario import Scenario


def shallow_student(spec: ModelSpec, layers: float) -> ModelSpec:
    """The teacher with round(F·L) layers (at least one), everything else unchanged."""
    n = max(1, round(spec.n_layers * layers))
    first_dense = min(spec.first_dense_layers, n - 1) if spec.is_moe else 0
    return spec.model_copy(
        update={
            "id": f"{spec.id}-distilled",
            "name": f"{spec.name} (student, {n} layers)",
            "n_layers": n,
            "first_dense_layers": first_dense,
            "layer_types": spec.layer_types[:n],  # the first n layers keep their kinds
        }
    )


class Distill(Optimization):
    name = "distill"
    summary = "distillation: serve a smaller student (a preset, or the teacher with fewer layers)"
    citation = "Hinton et al. 2015; Sanh et al. 2019 DistilBERT (40% fewer parameters)"
    order = 7  # spec transform, first
    params: ClassVar[dict[str, Param]] = {
        "student": Param(str, "", "student model: preset id or spec file", preset="model"),
        "layers": Param(
            float,
            1.0,
            "or: share of the teacher's layers the student keeps",
            lo=0,
            lo_open=True,
            hi=1,
        ),
    }

    def check(self) -> None:
        if self["student"] and self["layers"] != 1.0:
            raise RooflensError("--opt distill: give student=MODEL or layers=F, not both")

    def scenario(self, sc: Scenario) -> Scenario:
        if self["student"]:
            spec = get_model(self["student"])
        elif self["layers"] < 1.0:
            spec = shallow_student(sc.model, self["layers"])
        else:
            return sc
        new = with_model(sc, spec, "distilled student")
        teacher = count_params(sc.model).total
        return with_applied(new, distill_from_params=teacher)

    def result(self, pred: Prediction, sc: Scenario, pipeline: StepPricer) -> Prediction:
        before = sc.applied.distill_from_params
        if not before:
            return pred
        after = count_params(sc.model).total
        note = (
            f"distill: student {sc.model.id}, {before / 1e9:.3g} B → {after / 1e9:.3g} B "
            f"parameters ({1 - after / before:.0%} fewer)"
        )
        return replace(pred, notes=[*pred.notes, note])
