"""Which measured fused-MoE calls ran a tuned kernel config: the `moe_config` label of the MoE
rows (`tuned`, `untuned`, or missing where not established), from validate/moe_tuned_configs.yaml.

vLLM's Triton fused_moe picks its tiles from a per-device JSON file keyed by the GPU's expert
count E and expert width per GPU N = inter_size / moe_tp_size, and falls back to a generic
heuristic without one. On the A100 that is worth ~2x at large token counts (Mixtral shapes
with a tuned config reach 54-57 % of the bf16 peak, those without 26-31 %). Production
deployments run tuned configs or CUTLASS/TensorRT-LLM grouped GEMMs, so the calibrated `moe`
kind describes the tuned subset (validate/calibrate.py), as the attention kinds describe the
fastest engine per shape (validate/frontier.py); `rooflens validate compare` reports both.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rooflens.hardware.presets import read_data_file

TUNED_FILE = Path(__file__).with_name("moe_tuned_configs.yaml")
SUBSET_COLUMN = "moe_config"
TUNED, UNTUNED = "tuned", "untuned"


@cache
def tuned_configs(path: Path = TUNED_FILE) -> dict[str, dict[str, Any]]:
    """Per GPU preset id: its vLLM `device_name`, the `impl` measured, and the (E, N) pairs
    with a tuned config (`tuned`) or checked to have none (`checked_absent`), as sets."""
    out = {}
    for gpu, entry in read_data_file(path).items():
        out[str(gpu)] = {
            "device_name": entry["device_name"],
            "impl": entry["impl"],
            "tuned": frozenset((int(t["E"]), int(t["N"])) for t in entry["tuned"]),
            "absent": frozenset((int(e), int(n)) for e, n in entry.get("checked_absent", [])),
        }
    return out


def config_labels(table: pd.DataFrame, path: Path = TUNED_FILE) -> pd.Series:
    """`tuned` / `untuned` for each `moe` row of a GPU and implementation the file covers and
    whose (E per GPU, N per GPU) it lists; None for every other row (not established)."""
    labels = pd.Series(None, index=table.index, dtype=object)
    needed = {"op", "gpu", "impl", "num_experts", "inter_size", "moe_tp_size"}
    if table.empty or not needed <= set(table.columns):
        return labels
    ep = table["moe_ep_size"] if "moe_ep_size" in table.columns else 1
    experts = (table["num_experts"] // ep).astype("Int64")
    width = (table["inter_size"] // table["moe_tp_size"]).astype("Int64")
    for gpu, entry in tuned_configs(path).items():
        rows = table["op"].eq("moe") & table["gpu"].eq(gpu) & table["impl"].eq(entry["impl"])
        pairs = list(zip(experts[rows], width[rows], strict=True))
        tuned = np.array([p in entry["tuned"] for p in pairs], dtype=bool)
        absent = np.array([p in entry["absent"] for p in pairs], dtype=bool)
        index = rows[rows].index
        labels[index[tuned]] = TUNED
        labels[index[absent]] = UNTUNED
    return labels
