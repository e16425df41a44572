"""`validate serve`: replaying a benchmark through the simulation and fitting its serving terms.

The example files (tests/validate/serve_data, rebuilt by serve_example.py) are SIMULATED, not
measured: rooflens's own simulation with a known 4 ms host overhead per step and a batch cap
of 32. That known truth is what the fit must recover; a real benchmark has no such answer."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import yaml
from serve_example import DEPLOYMENT, TRUE_CAP, TRUE_OVERHEAD_S, build

import rooflens.cli as cli
from rooflens.model.planner.serving_profile import read_profile, with_step_overhead
from rooflens.model.planner.space import SweepSpace
from rooflens.model.planner.step_costs import CurveCosts
from rooflens.model.planner.sweep import run_sweep
from rooflens.model.planner.workload import ServingWorkload
from rooflens.validate.serve import measured, predicted, read_result
from rooflens.validate.serve_fit import deployment_curves, fit

DATA = Path(__file__).parent / "serve_data"


def setup(tmp_path: Path, engine: str, n: int, rate: float | None, conc: int | None):  # type: ignore[no-untyped-def]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(build(engine, n, rate, conc)))
    r = read_result(path)
    return r, deployment_curves(DEPLOYMENT, r.input_lens, r.output_lens)


def test_replay_without_overhead_reproduces_its_own_simulation(tmp_path: Path) -> None:
    r, c = setup(tmp_path, "vllm", 60, 8.0, None)
    p = predicted(CurveCosts(with_step_overhead(c, TRUE_OVERHEAD_S)), r, "chunked", TRUE_CAP,
                  2048, None, None)  # fmt: skip
    m = measured(r, None, None)
    for key in ("ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s"):
        assert p[key] == pytest.approx(m[key], rel=1e-4, abs=2e-6), key


def test_fit_recovers_the_known_overhead_and_cap(tmp_path: Path) -> None:
    # closed loop with 48 clients against a cap of 32: the cap binds, so TTFT identifies it
    r, c = setup(tmp_path, "sglang", 60, None, 48)
    f = fit(c, r, DEPLOYMENT)
    assert f.step_overhead_s == pytest.approx(TRUE_OVERHEAD_S, rel=0.02)
    assert f.max_batch == TRUE_CAP
    before = predicted(CurveCosts(c), r, "chunked", 256, 2048, None, None)
    meas = measured(r, None, None)
    assert before["tpot_p50_s"] < meas["tpot_p50_s"]  # 4 ms per step unpriced
    assert f.predicted["tpot_p50_s"] == pytest.approx(meas["tpot_p50_s"], rel=0.01)


def test_overhead_adds_exactly_one_step_to_a_lone_request() -> None:
    # One request of P ≤ chunk tokens alone: TTFT is one prefill step, each decode step one
    # iteration, so the overhead adds h to TTFT and h to TPOT (τ = 1).
    P, O = np.array([700.0]), np.array([20.0])
    c = deployment_curves(DEPLOYMENT, P, O)
    h = 0.003
    from rooflens.model.planner.sim import replay

    base = replay(CurveCosts(c), "chunked", np.zeros(1), P, O, 8)
    more = replay(CurveCosts(with_step_overhead(c, h)), "chunked", np.zeros(1), P, O, 8)
    assert more.ttft_s[0] - base.ttft_s[0] == pytest.approx(h, rel=1e-6)
    assert more.tpot_s(O)[0] - base.tpot_s(O)[0] == pytest.approx(h, rel=1e-6)


def test_cli_fit_writes_a_profile_the_planner_uses(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "profile.yaml"
    argv = ["validate", "serve", str(DATA / "sglang_simulated.jsonl"), "--model", "llama-3-8b",
            "--gpu", "h100-sxm", "--fit", "--out", str(out), "--json",
            "--ttft-slo", "0.5"]  # fmt: skip
    assert cli.main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["engine"] == "sglang" and result["fit"]["max_batch"] == TRUE_CAP
    m = result["measured"]
    assert m["goodput_requests_per_s"] <= m["request_throughput_per_s"]
    prof = read_profile(out)
    assert prof.step_overhead_s == pytest.approx(TRUE_OVERHEAD_S, rel=0.02)
    assert prof.provenance["format"] == "sglang" and len(prof.provenance["sha256"]) == 64
    assert yaml.safe_load(out.read_text())["kind"] == "rooflens-serving-profile"
    # a plan with the profile prices every step h slower and caps batches at the fitted one
    space = SweepSpace(model="llama-3-8b", gpus=("h100-sxm",), tp=(1,), weight_dtypes=("bf16",),
                       kv_dtypes=("bf16",), modes=("chunked",))  # fmt: skip
    w = ServingWorkload(rate_per_s=2.0)
    plain = run_sweep(space, w)
    fitted = run_sweep(space.model_copy(update={"step_overhead_s": prof.step_overhead_s}), w)
    (g,) = plain.curves
    assert fitted.curves[g].decode_s == pytest.approx(
        plain.curves[g].decode_s + prof.step_overhead_s
    )
    assert cli.main(["plan", "--model", "llama-3-8b", "--gpus", "h100-sxm", "--rate", "2",
                     "--tp", "1", "--serving-profile", str(out), "--json",
                     "--sim-requests", "0"]) in (0, 3)  # fmt: skip
    plan = json.loads(capsys.readouterr().out)
    assert max(plan["space"]["max_batches"]) <= TRUE_CAP
    assert any("serving profile" in n for n in plan["notes"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--tp", "0"], "--tp must be"),
        (["--ttft-slo", "-1"], "--ttft-slo must be"),
        (["--gpu", "h100-sxmm"], "h100-sxm"),
        (["--ep", "2"], "one attention group"),
        (["--prefix-hit-rate", "1"], "--prefix-hit-rate must be"),
        (["--fit", "--out", "/proc/no/profile.yaml"], "cannot write --out"),
        (["--out", "p.yaml"], "add --fit"),
        (["--fit", "--out", ""], "--out path is empty"),
    ],
)
def test_cli_bad_input_exits_2(argv: list[str], message: str, capsys) -> None:  # type: ignore[no-untyped-def]
    base = ["validate", "serve", str(DATA / "vllm_simulated.json"), "--model", "llama-3-8b",
            "--gpu", "h100-sxm"]  # fmt: skip
    assert cli.main(base + argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_plan_rejects_a_file_that_is_not_a_profile(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "p.yaml"
    bad.write_text("step_overhead_s: 0.1\n")
    code = cli.main(["plan", "--model", "llama-3-8b", "--gpus", "h100-sxm", "--rate", "1",
                     "--serving-profile", str(bad)])  # fmt: skip
    assert code == 2 and "not a serving profile" in capsys.readouterr().err


def test_a_request_beyond_the_model_context_is_rejected(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    doc = build("vllm", 5, 4.0, None)
    doc["input_lens"][0] = 3000  # opt-13b holds 2,048 tokens
    path = tmp_path / "long.json"
    path.write_text(json.dumps(doc))
    code = cli.main(["validate", "serve", str(path), "--model", "opt-13b", "--gpu", "h100-sxm"])
    assert code == 2 and "max context 2048" in capsys.readouterr().err


def test_a_prefix_cache_shortens_the_replayed_ttft(tmp_path: Path) -> None:
    r, _ = setup(tmp_path, "vllm", 60, 8.0, None)
    runs = []
    for hit in (0.0, 0.5):
        d = replace(DEPLOYMENT, prefix_hit_rate=hit)
        c = deployment_curves(d, r.input_lens, r.output_lens)
        runs.append(predicted(CurveCosts(c), r, "chunked", 256, 2048, None, None))
    # a 50 % hit removes half the prefill tokens: TTFT falls, but by at most half (the per-step
    # floors and the first step's other work stay)
    assert 0.5 * runs[0]["ttft_p50_s"] < runs[1]["ttft_p50_s"] < 0.95 * runs[0]["ttft_p50_s"]


def test_plan_refuses_eager_launch_on_top_of_a_serving_profile(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """A fitted profile's step overhead is the engine's measured host time per step; adding
    `eager-launch`'s launches × per-launch cost would count it twice: refused, in one line."""
    out = tmp_path / "profile.yaml"
    assert cli.main(["validate", "serve", str(DATA / "sglang_simulated.jsonl"), "--model",
                     "llama-3-8b", "--gpu", "h100-sxm", "--fit", "--out", str(out),
                     "--json"]) == 0  # fmt: skip
    capsys.readouterr()
    code = cli.main(["plan", "--model", "llama-3-8b", "--gpus", "h100-sxm", "--rate", "1",
                     "--serving-profile", str(out), "--opt", "eager-launch"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "count it twice" in err and err.count("\n") == 1
