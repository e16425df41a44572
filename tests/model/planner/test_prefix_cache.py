"""Prefix cache and KV tiers (kv_tiers.py): less prefill work and TTFT, shared blocks counted
once, and the time to bring an offloaded prefix back over the host link or from NVMe."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import rooflens.cli as cli
from rooflens.hardware.presets import get_gpu
from rooflens.model.planner.curves import Curves, Group, build_curves
from rooflens.model.planner.kv_tiers import host_capacity_bytes, tiers
from rooflens.model.planner.plan_args import build_request
from rooflens.model.planner.sim import simulate
from rooflens.model.planner.step_costs import CurveCosts
from rooflens.model.planner.workload import LengthDist, ServingWorkload
from rooflens.model.specs.presets import get_model

P = 4000.0


def curves(gpu: str = "h100-sxm", hit: float = 0.0, pool: float | None = None,
           offload: str = "none") -> Curves:  # fmt: skip
    w = ServingWorkload(rate_per_s=1.0, prompt=LengthDist.parse(str(P)),
                        output=LengthDist.parse("200"), prefix_hit_rate=hit,
                        prefix_pool_tokens=hit * P if pool is None else pool)  # fmt: skip
    return build_curves(get_model("llama-3-8b"), Group(gpu, 1, 1, 1, "bf16", "bf16", "bf16"), w,
                        [], profile="ideal", chunk_tokens=2048, overhead_bytes=2e9,
                        kv_offload=offload)  # fmt: skip


def test_a_hit_prefills_only_the_new_tokens() -> None:
    base = curves()
    for h in (0.25, 0.5, 0.9):
        c = curves(hit=h)
        ratio = c.prefill_s[0] / base.prefill_s[0]
        # the linear layers shrink to (1 − h); attention still reads the whole prompt
        assert 1 - h <= ratio <= (1 - h) * 1.3
        assert c.prompt_row_fraction == pytest.approx(1 - h)


def test_shared_prefix_blocks_count_once() -> None:
    base, h = curves(), 0.5
    c = curves(hit=h)
    b = base.kv_bytes_per_token
    room = base.capacity_bytes - base.fixed_bytes
    held = base.kv_tokens_per_sequence
    # one pool of h·P tokens held once; each sequence holds its own tokens beyond it
    assert c.max_batch_memory == math.floor((room - h * P * b) / ((held - h * P) * b))
    assert c.max_batch_memory > base.max_batch_memory


def test_host_offload_pays_the_copy_over_the_host_link() -> None:
    h = 0.5
    for gpu in ("h100-sxm", "gh200"):  # PCIe 5.0 x16 against NVLink-C2C
        hbm, host = curves(gpu, h), curves(gpu, h, offload="host")
        copy = h * P * hbm.kv_bytes_per_token / get_gpu(gpu).pcie_bytes_per_s
        assert host.prefill_s[0] - hbm.prefill_s[0] == pytest.approx(copy, rel=1e-9)
        # offloaded, the pool no longer holds HBM; each sequence holds its whole prompt
        base = curves(gpu)
        assert host.max_batch_memory == base.max_batch_memory
    pcie = curves("h100-sxm", h, offload="host").prefill_s[0] - curves("h100-sxm", h).prefill_s[0]
    c2c = curves("gh200", h, offload="host").prefill_s[0] - curves("gh200", h).prefill_s[0]
    assert pcie / c2c == pytest.approx(450 / 64, rel=1e-6)


def test_a_pool_beyond_host_memory_spills_to_nvme() -> None:
    h, b = 0.5, curves().kv_bytes_per_token
    host_tokens = host_capacity_bytes("h100-sxm") / b
    pool = 3 * host_tokens  # two thirds of it on NVMe
    host = curves(hit=h, pool=pool, offload="host")
    nvme = curves(hit=h, pool=pool, offload="nvme")
    # host only: two thirds of the pool does not fit, so two thirds of the hits are lost
    assert host.prompt_row_fraction == pytest.approx(1 - h / 3)
    assert nvme.prompt_row_fraction == pytest.approx(1 - h)
    read = h * P * b * (2 / 3) / float(tiers()["nvme"]["bytes_per_s"])
    pcie = h * P * b / get_gpu("h100-sxm").pcie_bytes_per_s
    hbm = curves(hit=h)
    assert nvme.prefill_s[0] - hbm.prefill_s[0] == pytest.approx(read + pcie, rel=1e-9)


def test_the_simulation_prefills_fewer_rows() -> None:
    rng = np.random.default_rng(0)
    n = 600
    arr = np.cumsum(rng.exponential(1 / 3.0, n))
    prompts, outputs = np.full(n, P), np.full(n, 200.0)
    runs = [simulate(CurveCosts(curves(hit=h)), "chunked", arr, prompts, outputs, 64)
            for h in (0.0, 0.75)]  # fmt: skip
    assert runs[1].ttft_p50_s < 0.6 * runs[0].ttft_p50_s


def test_trace_prefix_ids_give_the_hit_rate_and_pool(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    rows = [("sys", 300), ("sys", 300), ("doc", 1000), ("sys", 300)]
    path.write_text("".join(json.dumps({"timestamp": i, "input_len": 2000, "output_len": 50,
                                        "prefix_id": pid, "prefix_len": plen}) + "\n"
                            for i, (pid, plen) in enumerate(rows)))  # fmt: skip
    _, w = build_request(model="llama-3-8b", gpus="h100-sxm", trace=str(path))
    assert w.prefix_hit_rate == pytest.approx(600 / 8000)
    assert w.prefix_pool_tokens == 1300


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--prefix-hit-rate", "1.5"], "--prefix-hit-rate must be in"),
        (["--prefix-hit-rate", "-0.1"], "--prefix-hit-rate must be in"),
        (["--kv-offload", "ssd"], None),
        (["--kv-offload", "host"], "moves the prefix cache"),
    ],
)
def test_bad_prefix_options(extra: list[str], message: str | None, capsys) -> None:  # type: ignore[no-untyped-def]
    argv = ["plan", "--model", "llama-3-8b", "--gpus", "h100-sxm", "--rate", "1", *extra]
    if message is None:  # argparse rejects the choice itself
        with pytest.raises(SystemExit) as exc:
            cli.main(argv)
        assert exc.value.code == 2
        return
    assert cli.main(argv) == 2
    assert message in capsys.readouterr().err


def test_more_hits_never_cost_more() -> None:
    # invariants over the hit rate (pool in HBM): prefill time and TTFT fall, the batch that
    # fits grows (each sequence sheds h·P tokens and the pool adds them back once)
    runs = [curves(hit=h) for h in (0.0, 0.2, 0.5, 0.8, 0.95)]
    prefill = [c.prefill_s[0] for c in runs]
    batch = [c.max_batch_memory for c in runs]
    assert prefill == sorted(prefill, reverse=True)
    assert batch == sorted(batch)
