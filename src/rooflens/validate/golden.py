"""The golden snapshot: predictions for a fixed set of scenarios, checked in CI to 1e-9 relative.

Any change to the cost model, a preset or a calibration file that moves a prediction fails
tests/validate/test_golden.py until the snapshot is regenerated in the same commit:

    python -m rooflens.validate.golden --update

which refuses unless every number that moves is named by an entry of
validate/golden_reasons.yaml, bound to the snapshot it changes, with the reason and the test that
proves the new number (validate/golden_reasons.py). A refusal lists what is unexplained and
prints an entry to fill in.

The scenarios span dense, GQA, MoE and MLA models, TP, PP, weight/KV quantization, sliding
windows, both profiles and GPUs with and without their own calibration file.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from rooflens.hardware.errors import RooflensError
from rooflens.io.files import atomic_write_text
from rooflens.model.predict.api import make_scenario, run
from rooflens.validate.golden_reasons import (
    REASONS_FILE,
    ROOT,
    Move,
    load_reasons,
    problems,
    snapshot_digest,
    template,
)

GOLDEN_FILE = (
    Path(__file__).resolve().parents[3] / "tests" / "validate" / "golden" / "predictions.json"
)
SCENARIOS: dict[str, dict[str, Any]] = {
    "llama-3-8b/a100/b1/ideal": {"model": "llama-3-8b", "gpu": "a100-sxm-80gb",
                                 "profile": "ideal"},
    "llama-3-8b/a100/b1/calibrated": {"model": "llama-3-8b", "gpu": "a100-sxm-80gb",
                                      "profile": "calibrated"},
    "llama-2-7b/a100/b1/p128/calibrated": {"model": "llama-2-7b", "gpu": "a100-sxm-80gb",
                                           "prompt_len": 128, "output_len": 128,
                                           "act_dtype": "fp16", "weight_dtype": "fp16",
                                           "profile": "calibrated"},
    "llama-2-70b/h100/tp4/b8/ideal": {"model": "llama-2-70b", "gpu": "h100-sxm", "tp": 4,
                                      "batch": 8, "prompt_len": 2048, "output_len": 256,
                                      "profile": "ideal"},
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
                                        "prompt_len": 4096, "output_len": 512,
                                        "profile": "ideal"},
    "deepseek-v3/h200/tp8/ideal": {"model": "deepseek-v3", "gpu": "h200", "tp": 8,
                                   "weight_dtype": "fp8", "prompt_len": 1024,
                                   "profile": "ideal"},
    "llama-2-70b/a100/tp2/pp4/b16/ideal": {"model": "llama-2-70b", "gpu": "a100-sxm-80gb",
                                           "tp": 2, "pp": 4, "batch": 16, "prompt_len": 1024,
                                           "profile": "ideal"},
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


def moves(expected: dict, actual: dict, rel_tol: float = 1e-9) -> list[Move]:
    """Every number that moved (or appeared, or vanished); a whole scenario as field 'scenario'."""
    out = []
    for key in sorted(set(expected) | set(actual)):
        old, new = expected.get(key), actual.get(key)
        if old is None or new is None:
            # a whole scenario: its count of numbers on the side that has it
            count = [None if side is None else float(len(side)) for side in (old, new)]
            out.append(Move(key, "scenario", *count))
            continue
        for name in sorted(set(old) | set(new)):
            a, b = old.get(name), new.get(name)
            if a is None or b is None or not math.isclose(a, b, rel_tol=rel_tol, abs_tol=1e-300):
                out.append(Move(key, name, a, b))
    return out


def differences(expected: dict, actual: dict, rel_tol: float = 1e-9) -> list[str]:
    """Human-readable lines for every number that moved (or appeared, or vanished)."""
    return [m.line() for m in moves(expected, actual, rel_tol)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update", action="store_true", help="rewrite the snapshot file")
    args = parser.parse_args(argv)
    current = snapshot()
    text = GOLDEN_FILE.read_text() if GOLDEN_FILE.is_file() else ""
    expected = json.loads(text) if text else {}
    if args.update:
        return _update(expected, current, text)
    diff = differences(expected, current)
    print("\n".join(diff) if diff else "golden snapshot matches")
    return 1 if diff else 0


def _update(expected: dict, current: dict, text: str) -> int:
    """Rewrite the snapshot if every move is explained (a first snapshot needs no reasons)."""
    moved = moves(expected, current)
    digest = snapshot_digest(text)
    try:
        refused = problems(moved, load_reasons(), digest) if text and moved else []
    except RooflensError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if refused:
        shown = refused[:20] + ([f"… and {len(refused) - 20} more"] if len(refused) > 20 else [])
        where = REASONS_FILE.relative_to(ROOT)
        print("\n".join(shown))
        print(f"\nAdd an entry like this to {where} (from_snapshot {digest} is the snapshot now "
              f"committed):\n\n{template(moved, digest)}")  # fmt: skip
        print("golden snapshot not updated: explain every change (see above)", file=sys.stderr)
        return 2
    atomic_write_text(GOLDEN_FILE, json.dumps(current, indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN_FILE} ({len(current)} scenarios, {len(moved)} change(s))")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
