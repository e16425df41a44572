"""The golden snapshot: predictions for a fixed set of scenarios, checked in CI to 1e-9 relative.

Any change to the cost model, a preset or a calibration file that moves a prediction fails
tests/validate/test_golden.py until the snapshot is regenerated in the same commit, with the
reason in the commit message:

    python -m validate.golden --update

The scenarios span dense, GQA, MoE and MLA models, TP, weight/KV quantization, sliding windows,
both profiles and GPUs with and without their own calibration file.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from model.api import make_scenario, run

GOLDEN_FILE = (
    Path(__file__).resolve().parents[1] / "tests" / "validate" / "golden" / "predictions.json"
)
SCENARIOS: dict[str, dict[str, Any]] = {
    "llama-3-8b/a100/b1/ideal": {"model": "llama-3-8b", "gpu": "a100-sxm-80gb"},
    "llama-3-8b/a100/b1/calibrated": {"model": "llama-3-8b", "gpu": "a100-sxm-80gb",
                                      "profile": "calibrated"},
    "llama-2-7b/a100/b1/p128/calibrated": {"model": "llama-2-7b", "gpu": "a100-sxm-80gb",
                                           "prompt_len": 128, "output_len": 128,
                                           "act_dtype": "fp16", "weight_dtype": "fp16",
                                           "profile": "calibrated"},
    "llama-2-70b/h100/tp4/b8/ideal": {"model": "llama-2-70b", "gpu": "h100-sxm", "tp": 4,
                                      "batch": 8, "prompt_len": 2048, "output_len": 256},
    "llama-2-70b/h100/tp4/b8/calibrated": {"model": "llama-2-70b", "gpu": "h100-sxm", "tp": 4,
                                           "batch": 8, "prompt_len": 2048, "output_len": 256,
                                           "profile": "calibrated"},
    "mixtral-8x7b/h100/tp2/b16/calibrated": {"model": "mixtral-8x7b", "gpu": "h100-sxm",
                                             "tp": 2, "batch": 16, "prompt_len": 1024,
                                             "profile": "calibrated"},
    "llama-3-70b/a100/tp8/b64/int8/calibrated": {"model": "llama-3-70b", "gpu": "a100-sxm-80gb",
                                                 "tp": 8, "batch": 64, "weight_dtype": "int8",
                                                 "profile": "calibrated"},
    "llama-3-8b/l40s/b32/int4-fp8kv/calibrated": {"model": "llama-3-8b", "gpu": "l40s",
                                                  "batch": 32, "weight_dtype": "int4",
                                                  "kv_dtype": "fp8", "profile": "calibrated"},
    "llama-3-8b/a40/b4/calibrated": {"model": "llama-3-8b", "gpu": "a40", "batch": 4,
                                     "act_dtype": "fp16", "weight_dtype": "fp16",
                                     "profile": "calibrated"},
    "qwen2.5-7b/b200/b128/calibrated": {"model": "qwen2.5-7b", "gpu": "b200", "batch": 128,
                                        "prompt_len": 256, "output_len": 512,
                                        "profile": "calibrated"},
    "mistral-7b/rtx-4090/p4096/ideal": {"model": "mistral-7b", "gpu": "rtx-4090",
                                        "prompt_len": 4096, "output_len": 512},
    "deepseek-v3/h200/tp8/ideal": {"model": "deepseek-v3", "gpu": "h200", "tp": 8,
                                   "weight_dtype": "fp8", "prompt_len": 1024},
}  # fmt: skip


def _numbers(value: Any, prefix: str, out: dict[str, float]) -> None:
    """Flatten the numeric leaves of a prediction dict into 'a.b.c' -> float."""
    if isinstance(value, dict):
        for key, item in value.items():
            _numbers(item, f"{prefix}.{key}" if prefix else str(key), out)
    elif isinstance(value, bool):
        out[prefix] = float(value)
    elif isinstance(value, int | float):
        out[prefix] = float(value)


def snapshot() -> dict[str, dict[str, float]]:
    """Every scenario's headline, phase, memory and per-operator numbers."""
    result = {}
    for key, settings in SCENARIOS.items():
        data = run(make_scenario(**settings)).to_dict()
        numbers: dict[str, float] = {}
        _numbers({k: v for k, v in data.items() if k not in ("ops", "notes")}, "", numbers)
        for op in data["ops"]:
            numbers[f"ops.{op['phase']}.{op['name']}.time_s"] = float(op["time_s"])
        result[key] = numbers
    return result


def differences(expected: dict, actual: dict, rel_tol: float = 1e-9) -> list[str]:
    """Human-readable lines for every number that moved (or appeared, or vanished)."""
    lines = []
    for key in sorted(set(expected) | set(actual)):
        old, new = expected.get(key), actual.get(key)
        if old is None or new is None:
            lines.append(f"{key}: scenario {'added' if old is None else 'removed'}")
            continue
        for name in sorted(set(old) | set(new)):
            a, b = old.get(name), new.get(name)
            if a is None or b is None or not math.isclose(a, b, rel_tol=rel_tol, abs_tol=1e-300):
                lines.append(f"{key}: {name} {a!r} -> {b!r}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update", action="store_true", help="rewrite the snapshot file")
    args = parser.parse_args(argv)
    current = snapshot()
    if args.update:
        from model.io import atomic_write_text

        atomic_write_text(GOLDEN_FILE, json.dumps(current, indent=1, sort_keys=True) + "\n")
        print(f"wrote {GOLDEN_FILE} ({len(current)} scenarios)")
        return 0
    expected = json.loads(GOLDEN_FILE.read_text()) if GOLDEN_FILE.is_file() else {}
    diff = differences(expected, current)
    print("\n".join(diff) if diff else "golden snapshot matches")
    return 1 if diff else 0


if __name__ == "__main__":
    raise SystemExit(main())
