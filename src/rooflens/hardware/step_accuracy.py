"""How closely `calibrated` prices whole steps, as measured: what a prediction's accuracy note
says (model/predict/predictor.py).

The engine-steps benchmark (benchmarks/engine_steps.py) sets the calibrated price of each step's
dense GEMMs, attention and all-reduces beside what the engine's own measured kernels take for the
same calls (aiconfigurator's route), for Llama-3-8B and 70B at TP 1-8, batch 1-64, 2,048-token
prompts, every engine and precision the measured GPUs ran. `hardware/accuracy/steps.yaml`
(`--write-accuracy`) holds its summary, |ours / tables − 1| per engine,
precision scheme (model/specs/quant.py) and phase: per measured GPU in sample (priced with that
GPU's own fit), and pooled over the measured GPUs held out (each priced by the `rooflens
validate cv` fold that never saw it), which is what a GPU without engine tables should expect.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from rooflens.hardware.presets import read_data_file

STEP_ACCURACY_FILE = Path(__file__).parent / "accuracy" / "steps.yaml"
IN_SAMPLE, HELD_OUT = "in_sample", "held_out"


@dataclass(frozen=True)
class StepAccuracy:
    """|ours / tables − 1| over the benchmark's steps of one engine, scheme and phase."""

    median: float
    p90: float
    worst: float
    steps: int
    held_out: bool  # pooled over the measured GPUs, each priced by a fold without it


@cache
def _data(path: Path) -> dict[str, Any]:
    return read_data_file(path) if path.is_file() else {}


def step_accuracy(gpu_id: str, engine: str, scheme: str, phase: str,
                  path: Path = STEP_ACCURACY_FILE) -> StepAccuracy | None:  # fmt: skip
    """The GPU's own in-sample figures where the benchmark measured it, else the held-out ones;
    None where no measured step of that engine, scheme and phase exists."""
    data = _data(path)
    own = data.get(IN_SAMPLE, {}).get(gpu_id)
    entry = (own if own is not None else data.get(HELD_OUT, {})).get(engine, {})
    stats = entry.get(scheme, {}).get(phase)
    if not stats:
        return None
    return StepAccuracy(float(stats["median"]), float(stats["p90"]), float(stats["worst"]),
                        int(stats["steps"]), own is None)  # fmt: skip
