"""Every bad input the trust review found (issue 16 §3-5, issue 15 "Bad input on the CLI") ends
in exit 2 and ONE line on stderr that names the value, before any long work starts; a bug ends
in one line saying where to report it, with the traceback behind --debug."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

import rooflens.cli as cli
from rooflens.cli import main
from rooflens.hardware.presets import get_gpu

PLAN = ["plan", "--model", "llama-3-8b", "--gpus", "h100-sxm", "--tp", "1", "--rate", "1",
        "--sim-requests", "0"]  # fmt: skip
PREDICT = ["predict", "--model", "llama-2-7b", "--gpu", "h100-sxm", "--no-ops"]


def one_line_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """Run the CLI; assert exit 2 with exactly one line on stderr; return that line."""
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's errors
        code = int(exc.code or 0)
    err = capsys.readouterr().err
    assert code == 2, (argv, code, err)
    assert err.count("\n") == 1 and err.startswith("error:"), (argv, err)
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (["--overhead-gb", "inf"], "inf"),
        (["--overhead-gb", "nan"], "nan"),
        (["--overhead-gb", "-1"], "-1"),
        (["--batch", "abc"], "abc"),
        (["--batch", "1e3"], "1e3"),
        (["--opt", "fusion:rope=maybe"], "maybe"),
        (["--opt", "paged-kv", "--opt", "contiguous-kv"], "contradict"),
        (["--opt", "prompt-compression:ratio=inf"], "inf"),
        (["--opt", "prompt-compression:ratio=nan"], "nan"),
        (["--opt", "speculative:draft=llama-2-7b,gamma=0"], "gamma must be ≥ 1, got 0"),
        (["--opt", "offload:fraction=1.5"], "fraction must be in [0, 1], got 1.5"),
    ],
)
def test_predict_rejects(capsys, extra: list[str], named: str) -> None:  # type: ignore[no-untyped-def]
    assert named in one_line_error(capsys, PREDICT + extra)


def test_moe_capacity_factor_nan_is_rejected(capsys) -> None:  # type: ignore[no-untyped-def]
    argv = ["predict", "--model", "mixtral-8x7b", "--gpu", "h100-sxm", "--tp", "2", "--no-ops"]
    err = one_line_error(capsys, [*argv, "--opt", "moe:capacity_factor=nan"])
    assert "capacity_factor='nan'" in err


def test_deeply_nested_spec_file(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    deep = tmp_path / "deep.json"
    deep.write_text('{"a": ' * 100_000 + "1" + "}" * 100_000)
    assert "deep.json" in one_line_error(
        capsys, ["memory", "--model", str(deep), "--gpu", "h100-sxm"]
    )


@pytest.mark.parametrize(
    ("row", "named"),
    [
        ({"m": "abc"}, "'abc'"),
        ({"m": "inf"}, "inf"),
        ({"group_size": "0", "weight_dtype": "int4"}, "group_size"),
        ({"group_size": "-128", "weight_dtype": "int4"}, "-128"),
    ],
)
def test_kernels_predict_rows(capsys, tmp_path: Path, row: dict[str, str], named: str) -> None:  # type: ignore[no-untyped-def]
    cells = {"op": "gemm", "m": "16", "n": "4096", "k": "4096", "dtype": "bf16", **row}
    path = tmp_path / "in.csv"
    pd.DataFrame([cells]).to_csv(path, index=False)
    assert named in one_line_error(capsys, ["kernels", "predict", "--gpu", "h100-sxm", str(path)])


def test_kernels_predict_experts_read_beyond_the_experts(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "moe.csv"
    pd.DataFrame([{"op": "moe", "num_tokens": 16, "hidden_size": 4096, "inter_size": 14336,
                   "topk": 2, "num_experts": 8, "moe_tp_size": 1, "moe_ep_size": 1,
                   "dtype": "bf16", "experts_read": 100}]).to_csv(path, index=False)  # fmt: skip
    err = one_line_error(capsys, ["kernels", "predict", "--gpu", "h100-sxm", str(path)])
    assert "experts_read=100" in err and "8 experts" in err


@pytest.mark.parametrize("target", ["/proc/rooflens.csv", "{tmp}", "{tmp}/file.txt/x.csv"])
def test_unwritable_outputs_fail_before_the_work(capsys, tmp_path: Path, target: str) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "file.txt").write_text("a file, not a folder")
    target = target.format(tmp=tmp_path)
    start = time.perf_counter()
    one_line_error(capsys, [*PLAN, "--csv", target])
    assert time.perf_counter() - start < 2.0  # refused before the sweep (12 s on every GPU)
    path = tmp_path / "in.csv"
    pd.DataFrame([{"op": "gemm", "m": 1, "n": 2, "k": 3, "dtype": "bf16"}]).to_csv(path)
    one_line_error(capsys, ["kernels", "predict", "--gpu", "h100-sxm", str(path), "-o", target])


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (["--sim-requests", "-5"], "-5"),
        (["--sim-requests", "100000000"], "100000000"),
        (["--seed", "-1"], "-1"),
        (["--rate", "inf"], "inf"),
        (["--rate", "nan"], "nan"),
        (["--max-gpus", "0"], "0"),
        (["--kv-dtypes", "bf16,,x"], "bf16,,x"),
        (["--kv-dtypes", "bf16,x"], "'x'"),
        (["--weight-dtypes", "bf61"], "bf61"),
        (["--modes", "colocted"], "colocted"),
        (["--engine", "foo"], "'foo' is not one of vllm, sglang, trtllm"),
        (["--engine", "vllm,,x"], "empty item in 'vllm,,x'; give vllm, sglang, trtllm"),
        (["--engine", ""], "--engine names no engine: pick one or more of vllm, sglang, trtllm"),
        (["--price", "foo=3"], "foo"),
        (["--prompt-len-p99", "100"], "p99"),
        (["--prompt-len-p99", "nan"], "nan"),
        (["--prompt-len", "lognormal:p99=2048"], "lognormal:p99=2048"),
        (["--prompt-len", "lognormal:mean=512,p99=2048", "--prompt-len-p99", "4000"], "p99"),
        (["--tp", "16", "--max-gpus", "8"], "--max-gpus 8"),
        (["--tp", "3"], "--tp 3 must divide"),  # once "Of 0 configurations: ." with exit 3
        (["--pp", "5"], "--pp 5 must divide"),
        (["--max-gpus", "512", "--gpus", "all", "--tp", "1,2,4,8"], "narrow"),
    ],
)
def test_plan_rejects(capsys, extra: list[str], named: str) -> None:  # type: ignore[no-untyped-def]
    argv = list(PLAN)
    for flag, value in zip(extra[::2], extra[1::2], strict=True):
        if flag in argv:
            argv[argv.index(flag) + 1] = value
        else:
            argv += [flag, value]
    assert named in one_line_error(capsys, argv)


def test_plan_json_is_strict_json(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main([*PLAN, "--json", "--ttft-slo", "2", "--tpot-slo", "0.05"]) in (0, 3)
    out = capsys.readouterr().out
    json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))


def test_validate_threads_zero(capsys) -> None:  # type: ignore[no-untyped-def]
    assert "0" in one_line_error(capsys, ["validate", "run", "--device", "cpu", "--threads", "0"])


@pytest.mark.parametrize(("flag", "value"), [("--impl", "foo"), ("--kernels", "gemmm")])
def test_validate_run_names_a_typo_before_measuring(capsys, tmp_path, flag, value) -> None:  # type: ignore[no-untyped-def]
    from rooflens.validate.cpu import save_cpu_spec
    from rooflens.validate.store import device_dir

    save_cpu_spec(get_gpu("h100-sxm").model_copy(update={"id": "cpu"}), tmp_path)
    argv = ["validate", "run", "--device", "cpu", "--results", str(tmp_path), flag, value]
    assert value in one_line_error(capsys, argv)
    assert not list(device_dir("cpu", tmp_path).glob("*.csv"))  # nothing measured or stored


def test_validate_run_without_torch_says_what_to_install(capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch -> ImportError
    err = one_line_error(capsys, ["validate", "run", "--device", "cuda"])
    assert "pip install" in err and "torch" in err


def test_validate_compare_by_an_unknown_column(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path / "dev"
    folder.mkdir()
    pd.DataFrame({"op": ["gemm"], "m": [64], "n": [64], "k": [64], "dtype": ["bf16"],
                  "impl": ["torch:mm"], "measured_s": [1e-5], "gpu": ["h100-sxm"]}).to_csv(
        folder / "run.csv", index=False)  # fmt: skip
    argv = ["validate", "compare", "--device", "dev", "--results", str(tmp_path), "--by"]
    assert "'foo'" in one_line_error(capsys, [*argv, "foo"])
    (folder / "broken.csv").write_text("")
    assert main([*argv, "gpu,op"]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "broken.csv" in err and err.startswith("warning:")


def test_validate_report_on_an_empty_measured_folder(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    argv = ["validate", "report", "--measured", str(tmp_path), "-o", str(tmp_path / "out")]
    assert "no measurements" in one_line_error(capsys, argv)


def test_a_bug_says_where_to_report_it_and_debug_shows_the_traceback(capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    def broken(args: object) -> int:
        raise KeyError("oops")

    monkeypatch.setattr(cli.listing, "cmd_list", broken)
    assert main(["list", "gpus"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "report" in err and "--debug" in err
    with pytest.raises(KeyError):
        main(["list", "gpus", "--debug"])


@pytest.mark.parametrize(
    ("argv", "advice"),
    [
        (["--model", "deepseek-v3", "--gpu", "h100-sxm", "--tp", "8", "--ep", "8", "--batch", "1",
          "--context", "4096"], "--tp 16 --ep 16"),
        (["--model", "mixtral-8x7b", "--gpu", "l4", "--tp", "2", "--ep", "2"], "--ep"),
    ],
)  # fmt: skip
def test_the_fit_search_gives_advice_not_its_own_error(capsys, argv, advice) -> None:  # type: ignore[no-untyped-def]
    assert main(["memory", *argv]) == 3  # issue 27 §4: once exit 2, "--ep 8 ... --tp 16"
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and advice in err and "must be a multiple" not in err


def test_a_gpu_without_tdp_leaves_energy_out(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    spec = get_gpu("h100-sxm").model_dump()
    spec.pop("tdp_watts")
    spec["sources"].pop("tdp_watts", None)
    path = tmp_path / "no-tdp.json"
    path.write_text(json.dumps(spec))
    assert main([*PREDICT, "--gpu", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["energy"] is None and out["tpot_s"] > 0
    assert any("tdp_watts" in note for note in out["notes"])
    plan = [*PLAN, "--gpus", str(path), "--price", f"{path}=2", "--json"]
    assert main(plan) in (0, 3)
    assert any("tdp_watts" in line for line in json.loads(capsys.readouterr().out)["explanation"])


@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_usd_per_kwh_must_be_finite(capsys, value: str, json_flag: list[str]) -> None:  # type: ignore[no-untyped-def]
    assert value in one_line_error(capsys, [*PREDICT, "--usd-per-kwh", value, *json_flag])


def test_a_gpu_spec_of_absurd_bandwidth_is_one_line(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    spec = get_gpu("h100-sxm").model_dump() | {"hbm_bytes_per_s": 1e-300}
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(spec))
    assert "hbm_bytes_per_s" in one_line_error(capsys, [*PREDICT, "--gpu", str(path)])


E2E = ["validate", "e2e", "--model", "llama-3-8b", "--device", "cpu"]


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (["--batch", "99999999999"], "--batch"),  # hung in the memory check
        (["--context", "9000"], "maximum context"),  # llama-3-8b: 8,192
        (["--threads", "0"], "--threads"),
        (["--threads", "-1"], "--threads"),
        (["--threads", "100000"], "--threads"),  # once a segfault
        (["--repeats", "-1"], "--repeats"),
    ],
)
def test_validate_e2e_bounds_before_running(capsys, extra: list[str], named: str) -> None:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    assert named in one_line_error(capsys, [*E2E, *extra])
    assert time.perf_counter() - start < 2.0


def test_a_config_with_a_bom_or_from_a_pipe_is_read(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import os

    config = (Path(__file__).parents[1] / "model" / "fixtures" / "Meta-Llama-3-8B" /
              "config.json").read_bytes()  # fmt: skip
    bom = tmp_path / "config.json"
    bom.write_bytes(b"\xef\xbb\xbf" + config)
    assert main(["memory", "--model", str(bom), "--gpu", "h100-sxm", "--json"]) == 0
    expected = json.loads(capsys.readouterr().out)
    r, w = os.pipe()  # what /dev/stdin is under `rooflens … --model /dev/stdin < config.json`
    os.write(w, config)
    os.close(w)
    try:
        assert main(["memory", "--model", f"/proc/self/fd/{r}", "--gpu", "h100-sxm",
                     "--json"]) == 0  # fmt: skip
    finally:
        os.close(r)
    assert json.loads(capsys.readouterr().out) == expected


def test_a_folder_is_not_reported_as_missing(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    for argv in (["kernels", "predict", "--gpu", "h100-sxm", str(tmp_path)],
                 ["memory", "--model", f"{tmp_path}/", "--gpu", "h100-sxm"],
                 ["plan", "--model", "llama-3-8b", "--gpus", "h100-sxm", "--trace",
                  str(tmp_path)]):  # fmt: skip
        err = one_line_error(capsys, argv)
        assert "folder" in err and "not found" not in err, argv
