"""`rooflens validate compare|report` and `rooflens calibrate` through the CLI entry point."""

from __future__ import annotations

import json

from rooflens.cli import main


def test_validate_compare_json_on_the_shared_measurements(measured_dir, capsys):
    assert main(["validate", "compare", "--json", "--measured", str(measured_dir)]) == 0
    records = json.loads(capsys.readouterr().out)
    gemm = next(r for r in records if r["gpu"] == "a100-sxm-80gb" and r["op"] == "gemm")
    assert gemm["rows"] > 60_000 and gemm["calibrated_median"] < gemm["ideal_median"]


def test_validate_report_writes_html(measured_dir, tmp_path, capsys):
    assert main(["validate", "report", "--measured", str(measured_dir), "-o", str(tmp_path)]) == 0
    assert (tmp_path / "report.html").stat().st_size > 100_000
    assert "wrote" in capsys.readouterr().out


def test_unknown_device_results_is_a_one_line_error(tmp_path, capsys):
    code = main(["validate", "compare", "--device", "nope", "--results", str(tmp_path)])
    assert code == 2
    assert capsys.readouterr().err.startswith("error: no results stored for device 'nope'")


def test_run_on_cuda_without_a_gpu_says_what_to_do(capsys):
    import torch

    if torch.cuda.is_available():
        return
    assert main(["validate", "run", "--device", "cuda"]) == 2
    assert "--device cpu" in capsys.readouterr().err
