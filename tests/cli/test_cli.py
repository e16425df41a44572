"""The `rooflens` command: DESIGN.md's JSON keys and CSV contract, human tables with units, and
one-line errors with non-zero exits."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from rooflens.cli import main
from rooflens.model.predict.api import make_scenario, run

MEMORY_KEYS = {
    "weights_bytes", "kv_cache_bytes", "kv_bytes_per_token", "activation_bytes",
    "overhead_bytes", "total_bytes", "capacity_bytes", "fits", "max_batch",
}  # fmt: skip
PREDICT_KEYS = {"ttft_s", "tpot_s", "e2e_s", "output_tokens_per_s", "prefill", "decode", "ops"}
OP_KEYS = {"name", "phase", "count", "flops", "bytes", "intensity", "time_s", "bound"}


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("what", ["models", "gpus", "systems", "optimizations"])
def test_list_json(capsys: pytest.CaptureFixture[str], what: str) -> None:
    code, out, _ = run_cli(capsys, "list", what, "--json")
    assert code == 0
    rows = json.loads(out)
    if what in ("models", "gpus"):
        assert len(rows) >= 14
    if what == "models":
        assert {"llama-3-70b", "mixtral-8x7b", "deepseek-v3"} <= {r["id"] for r in rows}


def test_memory_json_keys_and_values(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(
        capsys, "memory", "--model", "llama-2-7b", "--gpu", "a100-sxm-80gb",
        "--batch", "64", "--context", "2048", "--json",
    )  # fmt: skip
    assert code == 0
    data = json.loads(out)
    assert MEMORY_KEYS <= set(data)
    assert data["kv_cache_bytes"] == 68_719_476_736  # anchors E2
    assert data["fits"] is True and data["max_batch"] >= 64


def test_predict_json_matches_api(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(
        capsys, "predict", "--model", "llama-3-70b", "--gpu", "h100-sxm", "--tp", "4",
        "--batch", "8", "--prompt-len", "1000", "--output-len", "200", "--json",
    )  # fmt: skip
    assert code == 0
    data = json.loads(out)
    assert PREDICT_KEYS <= set(data)
    for phase in ("prefill", "decode"):
        assert {"time_s", "flops", "bytes", "bound"} <= set(data[phase])
    assert all(OP_KEYS <= set(op) for op in data["ops"])
    assert "tp.all_reduce" in {op["name"] for op in data["ops"]}
    ref = run(make_scenario("llama-3-70b", "h100-sxm", tp=4, batch=8, prompt_len=1000,
                            output_len=200))  # fmt: skip
    assert data["ttft_s"] == pytest.approx(ref.ttft_s)
    assert data["tpot_s"] == pytest.approx(ref.tpot_s)
    assert data["output_tokens_per_s"] == pytest.approx(8 * 200 / ref.e2e_s)


def test_predict_human_output_has_units(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "predict", "--model", "llama-3-8b", "--gpu", "l40s")
    assert code == 0
    for text in ("TTFT", "TPOT", "tokens/s", " ms", " GB", "FLOP/byte", "memory-bound"):
        assert text in out


B300_FP8 = ("predict", "--model", "llama-3-8b", "--gpu", "b300", "--engine", "trtllm",
            "--batch", "1", "--weight-dtype", "fp8", "--act-dtype", "fp8",
            "--profile", "calibrated")  # fmt: skip
TRTLLM_FP8_TABLE = "aiconfigurator-b300/gemm/trtllm/1.3.0rc20/gemm_perf.parquet"


def test_predict_names_the_table_behind_a_quantized_decode_dearer_than_bf16(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # TensorRT-LLM's fp8 GEMMs on the B300 are measured slower than its bf16 ones at M = 1
    code, out, _ = run_cli(capsys, *B300_FP8, "--json")
    assert code == 0
    data = json.loads(out)
    slower = data["quant_slower_than_bf16"]
    bf16 = run(make_scenario("llama-3-8b", "b300", engine="trtllm", batch=1, kv_dtype="fp8",
                             profile="calibrated"))  # fmt: skip
    assert slower["tpot_s"] == pytest.approx(data["tpot_s"]) and data["tpot_s"] > bf16.tpot_s
    assert slower["bf16_tpot_s"] == pytest.approx(bf16.tpot_s)
    assert slower["families"] == ["gemm:fp8"]
    assert [t["table"] for t in slower["measured_tables"]] == [TRTLLM_FP8_TABLE]
    assert any(TRTLLM_FP8_TABLE in note for note in data["notes"])
    # what beats bf16 instead: each entry the prediction `--quant S --engine E` gives
    alternatives = slower["alternatives"]
    assert alternatives and [a["tpot_s"] for a in alternatives] == sorted(
        a["tpot_s"] for a in alternatives)  # fmt: skip
    for a in alternatives[:2]:
        asked = run(
            make_scenario(
                "llama-3-8b",
                "b300",
                engine=a["engine"],
                batch=1,
                quant=a["scheme"],
                kv_dtype="fp8",
                profile="calibrated",
            )
        )
        assert a["tpot_s"] == pytest.approx(asked.tpot_s) and a["tpot_s"] < bf16.tpot_s
    code, out, _ = run_cli(capsys, *B300_FP8, "--no-ops")
    headline, _, rest = out.partition("note: ")
    assert code == 0 and "TPOT" in headline  # the note sits under the headline table
    assert "costs more than bf16" in rest and TRTLLM_FP8_TABLE in " ".join(rest.split())
    assert "Beats bf16 here" in rest


@pytest.mark.parametrize("weight, act", [("int4", "bf16"), ("fp8", "fp8")])
def test_predict_says_nothing_where_quantization_pays(
    capsys: pytest.CaptureFixture[str], weight: str, act: str
) -> None:
    argv = ("predict", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--batch", "1",
            "--weight-dtype", weight, "--act-dtype", act, "--profile", "calibrated")  # fmt: skip
    code, out, _ = run_cli(capsys, *argv, "--json")
    data = json.loads(out)
    bf16 = run(make_scenario("llama-3-8b", "h100-sxm", batch=1, profile="calibrated",
                             kv_dtype=data["precision"]["kv_dtype"]))  # fmt: skip
    assert code == 0 and data["tpot_s"] < bf16.tpot_s
    assert data["quant_slower_than_bf16"] is None
    code, out, _ = run_cli(capsys, *argv, "--no-ops")
    assert code == 0 and "costs more than bf16" not in out


def test_kernels_predict_csv_contract(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [
        {"op": "gemm", "m": 4096, "n": 4096, "k": 4096, "dtype": "bf16", "tag": "a"},
        {"op": "attention_prefill", "batch": 2, "seq_len": 1024, "n_heads": 32,
         "n_kv_heads": 8, "head_dim": 128, "dtype": "bf16", "kv_dtype": "bf16", "tag": "b"},
        {"op": "attention_decode", "batch": 16, "kv_len": 4096, "n_heads": 32,
         "n_kv_heads": 8, "head_dim": 128, "dtype": "bf16", "kv_dtype": "fp8", "tag": "c"},
    ]  # fmt: skip
    src, dst = tmp_path / "in.csv", tmp_path / "out.csv"
    pd.DataFrame(rows).to_csv(src, index=False)
    code, _, _ = run_cli(capsys, "kernels", "predict", "--gpu", "a100-sxm-80gb", str(src),
                         "-o", str(dst))  # fmt: skip
    assert code == 0
    out = pd.read_csv(dst)
    assert list(out.columns[: len(pd.read_csv(src).columns)]) == list(pd.read_csv(src).columns)
    assert {"flops", "bytes", "predicted_s", "bound"} <= set(out.columns)
    assert list(out["tag"]) == ["a", "b", "c"]  # extra columns pass through
    gemm = out.iloc[0]
    assert gemm["flops"] == 2 * 4096**3
    assert gemm["bytes"] == 3 * 4096 * 4096 * 2
    assert gemm["predicted_s"] == pytest.approx(2 * 4096**3 / 312e12)
    assert gemm["bound"] == "compute"
    decode = out.iloc[2]
    assert decode["bound"] == "memory"
    # KV read once per KV head: 16 · 4096 · 2 · 8 · 128 · 1 B of fp8 KV dominates the bytes.
    assert decode["bytes"] >= 16 * 4096 * 2 * 8 * 128


def test_kernels_predict_moe_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Mixtral's experts (D 4096, F 14336, top-2 of 8) with expert TP 2: 64 tokens touch all 8.
    row = {"op": "moe", "num_tokens": 64, "hidden_size": 4096, "inter_size": 14336, "topk": 2,
           "num_experts": 8, "moe_tp_size": 2, "moe_ep_size": 1, "dtype": "bf16"}  # fmt: skip
    src, dst = tmp_path / "in.csv", tmp_path / "out.csv"
    pd.DataFrame([row]).to_csv(src, index=False)
    code, _, _ = run_cli(capsys, "kernels", "predict", "--gpu", "a100-sxm-80gb", str(src),
                         "-o", str(dst))  # fmt: skip
    assert code == 0
    out = pd.read_csv(dst).iloc[0]
    assert out["flops"] == pytest.approx(2 * 64 * 2 * 3 * 4096 * 14336 / 2)
    experts_read = 8 * (1 - (1 - 2 / 8) ** 64)
    weights = experts_read * 3 * 4096 * 14336 / 2 * 2
    assert out["bytes"] == pytest.approx(weights + 64 * 2 * (2 * 4096 + 4 * 7168) * 2)
    pd.DataFrame([{**row, "moe_ep_size": 3}]).to_csv(src, index=False)
    code, _, err = run_cli(capsys, "kernels", "predict", "--gpu", "a100-sxm-80gb", str(src))
    assert code == 2 and "moe_ep_size must divide num_experts" in err


ERRORS = [
    (["predict", "--model", "llama-3-7b", "--gpu", "h100-sxm"], "did you mean"),
    (["predict", "--model", "llama-2-7b", "--gpu", "h100"], "unknown gpu 'h100'"),
    (["predict", "--model", "llama-2-7b", "--gpu", "h100-sxm", "--tp", "3"], "--tp 3"),
    (["predict", "--model", "llama-2-7b", "--gpu", "h100-sxm", "--prompt-len", "5000"],
     "max context"),
    (["predict", "--model", "llama-2-7b", "--gpu", "h100-sxm", "--opt", "no-such-opt"],
     "unknown optimization"),
    (["memory", "--model", "llama-2-7b", "--gpu", "h100-sxm", "--batch", "0"], "batch"),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "needle"), ERRORS)
def test_errors_are_one_actionable_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], needle: str
) -> None:
    code, out, err = run_cli(capsys, *argv)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert needle in lines[0]


def test_model_that_does_not_fit_says_by_how_much_and_what_fits(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run_cli(capsys, "predict", "--model", "llama-3-70b", "--gpu", "a100-sxm-80gb")
    assert code == 3 and out == ""
    line = err.strip()
    assert len(line.splitlines()) == 1
    assert "over" in line and "GB" in line and "--tp 2" in line and "--quant w8a16" in line
    # The advice is honest: --tp 2 really fits.
    code, _, _ = run_cli(capsys, "predict", "--model", "llama-3-70b", "--gpu", "a100-sxm-80gb",
                         "--tp", "2", "--json")  # fmt: skip
    assert code == 0


def test_bad_spec_files_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad_gpu = tmp_path / "gpu.yaml"
    bad_gpu.write_text("id: x\nname: x\nhbm_bytes_per_s: -1\n")
    code, _, err = run_cli(capsys, "predict", "--model", "llama-2-7b", "--gpu", str(bad_gpu))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "hbm_bytes_per_s" in err
    broken = tmp_path / "config.json"
    broken.write_text("{not json")
    code, _, err = run_cli(capsys, "predict", "--model", str(broken), "--gpu", "h100-sxm")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "config.json" in err
    heads = tmp_path / "model.yaml"
    heads.write_text(
        "id: m\nname: m\nn_layers: 2\nd_model: 512\nn_heads: 8\nn_kv_heads: 3\nhead_dim: 64\n"
        "d_ff: 1024\ngated_mlp: true\nvocab_size: 1000\nattention: gqa\nmax_context: 2048\n"
    )
    code, _, err = run_cli(capsys, "predict", "--model", str(heads), "--gpu", "h100-sxm")
    assert code == 2 and "n_kv_heads (3) must divide n_heads (8)" in err


def test_console_script_is_installed() -> None:
    exe = shutil.which("rooflens")
    if exe is None:
        pytest.skip("rooflens console script not on PATH (package not installed)")
    proc = subprocess.run([exe, "list", "gpus", "--json"], capture_output=True, text=True,
                          check=False, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert any(g["id"] == "h100-sxm" for g in json.loads(proc.stdout))


def test_units_round_before_choosing_the_unit() -> None:
    from rooflens.io.units import fmt_bytes, fmt_flops, fmt_time

    assert fmt_time(0.9996) == "1 s" and fmt_time(0.0009996) == "1 ms"
    assert fmt_bytes(999.6e9) == "1 TB" and fmt_flops(999.9e12) == "1 PFLOP"
    assert fmt_time(0.0123) == "12.3 ms" and fmt_time(1.5e-7) == "150 ns"


def test_gpu_list_shows_fp4_and_the_rate_the_kernels_issue(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The B300's FP4 cell gives its datasheet peak and, in parentheses, the rate the engines'
    SM100-family kernels issue (2x FP8); a part without a cap shows its datasheet alone, and no
    id is cut or wrapped however narrow the terminal."""
    monkeypatch.setenv("COLUMNS", "130")
    code, out, _ = run_cli(capsys, "list", "gpus")
    assert code == 0 and "fp4 TFLOP/s" in out
    rows = {line.split("│")[1].strip(): line for line in out.splitlines() if line.startswith("│ ")}
    assert "13500 (9000)" in rows["b300"] and "15000 (10000)" in rows["gb300"]
    assert "9000" in rows["b200"] and "(" not in rows["b200"].split("│")[8]
    assert {"a100-pcie-80gb", "rtx-pro-6000", "v100-sxm-32gb"} <= set(rows)
