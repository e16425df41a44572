"""The prefix cache and the KV-cache tiers it can live in: GPU HBM, then host DRAM (over PCIe,
or NVLink-C2C on a GH200: the GPU preset's host link), then NVMe (kv_tiers.yaml, cited).

A prefix cache (vLLM automatic prefix caching, SGLang RadixAttention, Zheng et al. 2024) keeps
the KV of prompt prefixes that later requests share, so a request whose prefix is cached
prefills only its own tokens (attending over the whole prompt). The hit rate h is the share of
prompt tokens served from cache (`--prefix-hit-rate`, or a trace's prefix ids); the pool is
the cached prefix tokens (one prefix of h·mean P for `--prefix-hit-rate`, the distinct
prefixes of a trace).

Where the pool lives (`--kv-offload`):
- `none`: in HBM, its blocks shared by every request that uses them, so they count once
  toward capacity: max batch = (HBM room − pool) / (KV a sequence holds beyond its prefix);
- `host` / `nvme` (LMCache, Mooncake): in host DRAM, overflowing to NVMe; HBM holds only the
  running sequences, each with its prefix brought back (no sharing credit), and a hit pays the
  copy: h·P tokens' KV over the host link, plus the NVMe read for the share of the pool that
  sits on NVMe (the two copies in sequence). A pool beyond every tier's capacity loses hits in
  proportion (an LRU cache under uniform reuse keeps capacity/pool of them).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from rooflens.hardware.presets import read_data_file
from rooflens.hardware.spec import GPUSpec

TIERS_FILE = Path(__file__).parent / "kv_tiers.yaml"
OFFLOAD = ("none", "host", "nvme")


@cache
def tiers() -> dict[str, Any]:
    return read_data_file(TIERS_FILE)


def host_capacity_bytes(gpu_id: str) -> float:
    host = tiers()["host"]
    return float(host.get("per_gpu", {}).get(gpu_id, host)["capacity_bytes_per_gpu"])


@dataclass(frozen=True)
class PrefixPlan:
    hit: float  # share of prompt tokens served from cache, after capacity losses
    hbm_pool_tokens: float  # cached prefix tokens resident in HBM, counted once
    shared_tokens: float  # per sequence: prefix tokens it shares rather than holds (HBM pool)
    load_s_per_token: float  # bringing one cached token's KV (this GPU's shard) back to HBM


def prefix_plan(
    gpu_id: str, gpu: GPUSpec, kv_bytes_per_token: float, hit: float, pool_tokens: float,
    prompt_mean: float, offload: str,
) -> PrefixPlan:  # fmt: skip
    """Where the prefix pool lives and what a hit costs (kv_bytes_per_token: per GPU)."""
    if hit <= 0 or pool_tokens <= 0:
        return PrefixPlan(0.0, 0.0, 0.0, 0.0)
    if offload == "none":
        return PrefixPlan(hit, pool_tokens, hit * prompt_mean, 0.0)
    b = max(kv_bytes_per_token, 1e-30)
    host_tokens = host_capacity_bytes(gpu_id) / b
    nvme = tiers()["nvme"]
    nvme_tokens = float(nvme["capacity_bytes_per_gpu"]) / b if offload == "nvme" else 0.0
    kept = min(pool_tokens, host_tokens + nvme_tokens)
    on_nvme = max(0.0, kept - host_tokens) / kept
    per_byte = 1.0 / gpu.pcie_bytes_per_s + on_nvme / float(nvme["bytes_per_s"])
    return PrefixPlan(hit * kept / pool_tokens, 0.0, 0.0, b * per_byte)
