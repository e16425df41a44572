"""rooflens's Python API: the CLI's commands as functions that return typed results.

`predict`, `memory` and `compare` take the fields of `ScenarioRequest`
(model/predict/request.py), the same ones `rooflens predict` takes as flags (`--prompt-len 2048`
is `prompt_len=2048`, each `--opt` one entry of `opts`), and build the scenario through the one
builder every face uses (model/predict/api.py `scenario_of`). `plan` takes `rooflens plan`'s
options (model/planner/plan_args.py `build_request`), `validate_kernels` a table of measured
kernel calls (DESIGN.md's CSV contract plus `measured_s`). Every result has `to_dict()` (plain
data, as `--json` prints it) and `to_frame()` (a pandas table). Bad input raises
`RooflensError` (a ValueError) with the one-line message the CLI prints; its `field` names the
request field it is about. docs/api.md has a worked example.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from rooflens.model.planner.plan import Plan
    from rooflens.model.predict.steps import MemoryBreakdown, Prediction


def predict(model: str, gpu: str, **fields: Any) -> Prediction:
    """TTFT, TPOT, end-to-end time, throughput, memory and the per-operator roofline of one
    scenario (`rooflens predict`); `fields` are ScenarioRequest's (batch, prompt_len, opts, …)."""
    from rooflens.model.predict.api import make_pipeline

    request = _request(model, gpu, fields)
    return make_pipeline(_scenario(request)).predict()


def memory(model: str, gpu: str, **fields: Any) -> MemoryBreakdown:
    """Memory per GPU (weights, KV cache, activations, overhead), whether it fits and the
    largest batch that does (`rooflens memory`, its --context being `prompt_len` here)."""
    from rooflens.model.predict.api import make_pipeline

    request = _request(model, gpu, fields)
    return make_pipeline(_scenario(request)).memory()


@dataclass(frozen=True)
class Waterfall:
    """`compare`'s stages, naive baseline first (model/analysis/waterfall.py: one dict each)."""

    stages: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return {"stages": self.stages}

    def to_frame(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame(self.stages)


def compare(model: str, gpu: str, stack: Sequence[str] = (), **fields: Any) -> Waterfall:
    """The waterfall from a naive baseline to the full optimization stack (`rooflens compare`):
    `stack` lists the optimizations in the order added (default: the four switch-offs, then
    the rest); `opts` among `fields` apply to every stage."""
    from rooflens.model.analysis.waterfall import DEFAULT_STACK, split_stack, waterfall

    request = _request(model, gpu, fields)
    stages = split_stack(list(stack)) if stack else list(DEFAULT_STACK)
    return Waterfall(waterfall(_scenario(request), stages, list(request.opts)))


def plan(
    model: str, gpus: str = "all", *, simulate_requests: int = 2000, seed: int = 0,
    **options: Any,
) -> Plan:  # fmt: skip
    """The cheapest GPUs that meet a load and its SLOs (`rooflens plan`): `options` are its
    flags' (rate, prompt_len, output_len, ttft_slo, tpot_slo, tp, weight_dtypes, opts, …;
    lists are comma-separated strings as on the command line)."""
    from rooflens.model.planner.plan import plan as run_plan
    from rooflens.model.planner.plan_args import build_request

    space, workload = build_request(model=model, gpus=gpus, **options)
    return run_plan(space, workload, simulate_requests=simulate_requests, seed=seed)


@dataclass(frozen=True)
class KernelValidation:
    """`validate_kernels`'s result: every measured row with its predictions and errors
    (`rows`), and the error statistics per group (`summary`)."""

    rows: pd.DataFrame
    summary: pd.DataFrame

    def to_dict(self) -> dict[str, Any]:
        return {"summary": self.summary.to_dict(orient="records")}

    def to_frame(self) -> pd.DataFrame:
        return self.summary


def validate_kernels(
    measured: pd.DataFrame | str | Path,
    profiles: Sequence[str] = ("ideal", "calibrated"),
    by: Sequence[str] = ("gpu", "op"),
) -> KernelValidation:
    """Measured kernel calls against their predictions (`rooflens validate compare`):
    `measured` is a table, or a CSV file, of DESIGN.md's kernel calls (a `gpu` preset id, `op`
    and its shape columns) with `measured_s`; the summary is the median and p90 |error| of each
    profile per group of `by`."""
    import pandas as pd

    from rooflens.hardware.errors import RooflensError
    from rooflens.validate.compare import join, summarize

    frame = measured if isinstance(measured, pd.DataFrame) else pd.read_csv(measured)
    missing = [c for c in ("gpu", "op", "measured_s") if c not in frame.columns]
    if missing:
        raise RooflensError(f"measured kernels need the column(s) {', '.join(missing)}")
    joined = join(frame, tuple(profiles))
    return KernelValidation(joined, summarize(joined, tuple(by), tuple(profiles)))


def _request(model: str, gpu: str, fields: dict[str, Any]) -> Any:
    from rooflens.model.predict.request import ScenarioRequest

    if isinstance(fields.get("opts"), str):  # one optimization given as a string
        fields = {**fields, "opts": (fields["opts"],)}
    elif "opts" in fields:
        fields = {**fields, "opts": tuple(fields["opts"])}
    return ScenarioRequest(model=model, gpu=gpu, **fields)


def _scenario(request: Any) -> Any:
    from rooflens.model.predict.api import scenario_of

    return scenario_of(request)
