"""Loaders of the shared measurements: units, keys and derived shapes against the raw files."""

from __future__ import annotations

import pandas as pd
import pytest

from rooflens.model.pricing.kernel_columns import map_distinct
from rooflens.validate.aiconfigurator import TRT_FLOW, graph_latency_ms, load_moe, load_nccl
from rooflens.validate.datasets import load_kernels


@pytest.fixture(scope="module")
def kernels(measured_dir):
    return load_kernels(measured_dir)


def test_every_row_has_the_contract_and_provenance_columns(kernels):
    for column in ("op", "dtype", "measured_s", "impl", "gpu", "source"):
        assert kernels[column].notna().all(), column
    assert set(kernels["gpu"]) == {"a100-sxm-80gb", "a40", "h100-sxm", "b300", "rtx-pro-6000"}
    assert (kernels["measured_s"] > 0).all()


def test_aiconfigurator_latency_is_converted_from_ms(kernels, measured_dir):
    raw = pd.read_parquet(measured_dir / "aiconfigurator-a100/gemm/vllm/0.14.0/gemm_perf.parquet")
    one = raw[(raw.m == 8192) & (raw.n == 65536) & (raw.k == 4096)].iloc[0]
    rows = kernels[(kernels.impl == "vllm-0.14.0:vllm_default") & (kernels.m == 8192)
                   & (kernels.n == 65536) & (kernels.k == 4096)]  # fmt: skip
    assert len(rows) == 1
    assert rows["measured_s"].iloc[0] == pytest.approx(one.latency * 1e-3, rel=1e-12)
    assert rows["dtype"].iloc[0] == "bf16"


def test_decode_kv_len_is_cached_tokens_plus_the_new_one(kernels, measured_dir):
    path = "aiconfigurator-a100/attention/sglang/0.5.10/generation_attention_perf.parquet"
    raw = pd.read_parquet(measured_dir / path)
    rows = kernels[kernels.source == path]
    assert len(rows) == len(raw)
    assert sorted(rows["kv_len"].unique()) == sorted((raw["step"] + 1).unique())
    assert rows["kv_len"].min() == 2  # step 1: one cached token plus the new one


def test_vidur_gemm_shapes_follow_the_readme(kernels):
    # Llama-2-7B: D 4096, 32 heads (MHA), F 11008, gated. At TP 2: fused QKV N = 3·4096/2,
    # up N = 2·11008/2, down K = 11008/2, o_proj K = 4096/2.
    rows = kernels[(kernels.model == "Llama-2-7b-hf") & (kernels.tp == 2)
                   & (kernels.gpu == "a40") & (kernels.m == 128)]  # fmt: skip
    shapes = {r.name: (r.n, r.k) for r in rows.itertuples() if r.op == "gemm"}
    assert shapes == {
        "attn_pre_proj": (6144, 4096),
        "attn_post_proj": (4096, 2048),
        "mlp_up_proj": (11008, 4096),
        "mlp_down_proj": (4096, 5504),
    }
    act = kernels[(kernels.model == "Llama-2-7b-hf") & (kernels.tp == 2) & (kernels.gpu == "a40")
                  & (kernels.name == "mlp_act")]  # fmt: skip
    act = act[act.elements_written == 128 * 5504]
    assert set(act["elements_read"]) == {128 * 11008}  # gate and up halves in, F/TP out


def test_vidur_phi2_has_one_layernorm_and_no_gate(kernels):
    rows = kernels[(kernels.model == "phi-2") & (kernels.gpu == "a100-sxm-80gb")]
    norms = rows[rows.op == "norm"]
    assert set(norms["name"]) == {"input_layernorm"} and set(norms["norm"]) == {"layernorm"}
    up = rows[(rows.name == "mlp_up_proj")]
    assert set(up["n"]) == {10240}


def test_moe_and_nccl_tables(measured_dir):
    moe = load_moe(measured_dir)
    # every engine's fused-MoE table of every GPU (counted from the files, not hard-coded)
    files = sorted(measured_dir.glob("aiconfigurator-*/moe/*/*/moe_perf.parquet"))
    assert len(files) >= 12
    # ... less the rows timed with a stand-in activation (test below), counted from the raw column
    raw = [pd.read_parquet(f, columns=["kernel_source"])["kernel_source"] for f in files]
    stand_in = sum(int(k.astype(str).str.endswith("_situ_as_silu").sum()) for k in raw)
    assert stand_in > 0 and len(moe) == sum(len(k) for k in raw) - stand_in
    assert {"num_tokens", "topk", "num_experts", "quant"} <= set(moe.columns)
    vllm_a100 = moe[moe.source.str.startswith("aiconfigurator-a100/moe/vllm/")]
    assert len(vllm_a100) == 6360 and set(vllm_a100["quant"]) == {"bfloat16"}
    nccl = load_nccl(measured_dir)
    half = nccl[(nccl.dtype == "fp16")].iloc[0]
    raw = pd.read_parquet(measured_dir / "aiconfigurator-a100/comm/nccl/2.27.3/nccl_perf.parquet")
    assert half.message_bytes == 2 * raw[raw.nccl_dtype == "half"].iloc[0].message_size


# ---------------------------------------------------------------- the validator's own H100 runs
H100 = "rooflens-h100"


@pytest.fixture(scope="module")
def runs(measured_dir):
    from rooflens.validate.datasets import load_rooflens

    return load_rooflens(measured_dir)


def test_h100_rows_keep_the_runner_seconds_and_provenance(runs, measured_dir):
    raw = pd.read_csv(measured_dir / H100 / "torch" / "gemm.csv")
    assert len(runs) == sum(len(pd.read_csv(p)) for p in (measured_dir / H100).glob("*/*.csv"))
    first = raw.iloc[0]
    row = runs[(runs.source == f"{H100}/torch/gemm.csv") & (runs.m == first.m)
               & (runs.n == first.n) & (runs.k == first.k)]  # fmt: skip
    assert row["measured_s"].iloc[0] == first.measured_s  # seconds on disk, no conversion
    assert set(runs["gpu"]) == {"h100-sxm"}
    assert set(runs["timing"]) == {"cuda_graph", "do_bench"}


def test_h100_quantized_kernels_baselines_are_16bit_gemms(runs):
    # validate/cases.py: the torch baseline of W4A16 / W8A16 is a bf16 torch.mm of the same shape
    base = runs[(runs.impl == "torch:mm") & runs.kernel.isin(["w4a16_gemm", "w8a16_gemm"])]
    assert len(base) == 320 and (base["weight_dtype"] == "bf16").all()
    assert base["group_size"].isna().all()
    ours = runs[runs.impl == "triton:w4a16_gemm"]
    assert (ours["weight_dtype"] == "int4").all() and (ours["group_size"] == 128).all()


def test_h100_kernel_rows_join_the_contract_and_drop_launch_bound_timings(kernels):
    from rooflens.model.pricing.kernel_columns import REQUIRED

    h100 = kernels[(kernels.gpu == "h100-sxm") & kernels.source.str.startswith(H100)]
    counts = h100.groupby(["op", "impl"]).size().to_dict()
    # one row per shape: decode and paged decode share SDPA shapes, W4A16 / W8A16 baselines
    # share the bf16 GEMM shapes of gemm.csv; for the norm, the fused Triton RMSNorm only
    assert counts == {("attention_decode", "torch:sdpa"): 80,
                      ("attention_prefill", "torch:sdpa"): 30, ("gemm", "torch:mm"): 246,
                      ("norm", "triton:rmsnorm"): 10}  # fmt: skip
    for op, rows in h100.groupby("op"):
        for column in REQUIRED.get(str(op), ("rows", "hidden", "dtype")):
            assert rows[column].notna().all(), (op, column)
    assert not h100.duplicated([c for c in h100.columns if c not in ("measured_s",)]).any()


def test_kernel_rows_keep_graph_timings_and_long_do_bench_ones():
    from rooflens.validate.runs import LAUNCH_HIDDEN_S, kernel_rows

    base = {"gpu": "h100-sxm", "op": "gemm", "m": 8, "n": 64, "k": 64, "dtype": "bf16",
            "impl": "torch:mm", "source": "x.csv"}  # fmt: skip
    frame = pd.DataFrame([
        {**base, "m": 1, "timing": "cuda_graph", "measured_s": 5e-6},
        {**base, "m": 2, "timing": "do_bench", "measured_s": 0.5 * LAUNCH_HIDDEN_S},
        {**base, "m": 3, "timing": "do_bench_fallback: RuntimeError", "measured_s": 0.5e-6},
        {**base, "m": 4, "timing": "do_bench", "measured_s": 3 * LAUNCH_HIDDEN_S},
        {**base, "m": 5, "timing": "cuda_graph", "measured_s": 4e-6, "impl": "triton:gemm"},
        {**base, "m": 1, "timing": "cuda_graph", "measured_s": 7e-6},  # a repeat: median
    ])  # fmt: skip
    out = kernel_rows(frame).set_index("m")
    assert sorted(out.index) == [1, 4]
    assert out.loc[1, "measured_s"] == pytest.approx(6e-6)


def test_sliding_window_rows_carry_their_window(kernels, measured_dir):
    # the newer engine tables time each shape also under a sliding window (`window_size`):
    # such a call attends at most that many keys, so it must not load as full attention
    path = "aiconfigurator-h100/attention/vllm/0.24.0/context_attention_perf.parquet"
    raw = pd.read_parquet(measured_dir / path)
    rows = kernels[kernels.source == path]
    assert len(rows) == len(raw)
    assert sorted(rows["window"].unique()) == sorted(raw["window_size"].unique())
    assert (rows["window"] > 0).sum() == (raw["window_size"] > 0).sum() > 0
    # and the windowed call of a long prompt is the faster one, as its keys say
    shape = (rows.seq_len == 16384) & (rows.batch == 1) & (rows.n_heads == 32)
    long = rows[shape & (rows.n_kv_heads == 8) & (rows.head_dim == 128) & (rows.kv_dtype == "bf16")]
    by_window = long.groupby("window")["measured_s"].median()
    assert by_window[128] < by_window[0] / 4
    # tables without the column measured full attention only
    old = kernels[kernels.source.str.startswith("aiconfigurator-a100/attention/vllm")]
    assert len(old) and (old["window"] == 0).all()


def test_blackwell_ultra_nvfp4_gemms_run_at_the_sm100_kernels_rate(measured_dir):
    """The B300's engines reach its FP4 kernel peak (2x FP8, hardware/presets/gpus/b300.yaml),
    not its datasheet's 3x: every engine's fastest NVFP4 GEMM lies between 55 % and 100 % of the
    kernel peak and under half the datasheet's, as the RTX PRO 6000's (whose FP4 is 2x FP8 on
    the datasheet) lie at 55-100 % of its own."""
    from rooflens.hardware.presets import get_gpu

    for gpu, folder in (
        ("b300", "aiconfigurator-b300"),
        ("rtx-pro-6000", "aiconfigurator-rtx-pro-6000"),
    ):
        spec = get_gpu(gpu)
        files = sorted((measured_dir / folder / "gemm").glob("*/*/gemm_perf.parquet"))
        assert len(files) == 3, folder
        for path in files:
            raw = pd.read_parquet(path)
            fp4 = raw[raw["gemm_dtype"] == "nvfp4"]
            best = (2 * fp4["m"] * fp4["n"] * fp4["k"] / (fp4["latency"] * 1e-3)).max()
            assert 0.55 * spec.kernel_peak("fp4") < best <= spec.kernel_peak("fp4"), (path, best)
            if gpu == "b300":
                assert best < 0.5 * spec.peak("fp4"), (path, best)


def test_only_the_tensorrt_profiler_rows_are_single_event_timings(measured_dir):
    """The evidence for graph_latency_ms: the A100's TensorRT-LLM 1.0 quantized GEMMs
    (trt_flow_) all lie on the 1.024 us tick of one event pair; no graph-replayed table does."""
    for path in sorted(measured_dir.glob("aiconfigurator-*/gemm/*/*/gemm_perf.parquet")):
        raw = pd.read_parquet(path)
        tick_ms = 1.024e-3
        # within 10 ns of a tick (the float32 column holds a 60 ms call to ~4 ns)
        on_tick = (raw["latency"] - (raw["latency"] / tick_ms).round() * tick_ms).abs() < 1e-5
        flow = raw["kernel_source"].str.startswith(TRT_FLOW)
        assert on_tick[flow].all(), path
        assert on_tick[~flow].mean() < 0.1, path
    trt = pd.read_parquet(measured_dir / "aiconfigurator-a100/gemm/trtllm/1.0.0/gemm_perf.parquet")
    assert set(trt.loc[trt["kernel_source"].str.startswith(TRT_FLOW), "gemm_dtype"]) == {
        "int4_wo", "int8_wo", "sq"}  # fmt: skip


def test_the_profiler_gap_is_taken_off_its_rows_alone(kernels, measured_dir):
    path = "aiconfigurator-a100/gemm/trtllm/1.0.0/gemm_perf.parquet"
    raw = pd.read_parquet(measured_dir / path)
    flow = raw["kernel_source"].str.startswith(TRT_FLOW)
    gap = raw["latency"] - graph_latency_ms(raw)
    assert (gap[~flow] == 0).all()
    assert gap[flow].max() - gap[flow].min() < 1e-9  # one gap per table, in ms
    assert 3e-3 < gap[flow].iloc[0] < 6e-3  # a launch, not a kernel
    loaded = kernels[kernels["source"] == path]
    assert len(loaded) == len(raw) and (loaded["measured_s"] > 0).all()
    assert loaded["measured_s"].sum() == pytest.approx(graph_latency_ms(raw).sum() * 1e-3)
    for other in ("aiconfigurator-h100/gemm/vllm/0.24.0/gemm_perf.parquet",):
        table = pd.read_parquet(measured_dir / other)
        assert (graph_latency_ms(table) == table["latency"]).all()


def test_a_known_gap_is_recovered():
    """Closed form: graph-timed bf16 rows, and profiler rows = the same kernel time + 4 us."""
    shapes = [(m, n, k) for m in (1, 8) for n in (128, 512) for k in (256, 512)]
    kernel_ms = [0.002 + 1e-6 * n * k / 1e3 for _, n, k in shapes]
    rows = [
        {"m": m, "n": n, "k": k, "gemm_dtype": dtype, "kernel_source": source, "latency": t + add}
        for (m, n, k), t in zip(shapes, kernel_ms, strict=True)
        for dtype, source, add in (
            ("bfloat16", "torch_flow", 0.0),
            ("sq", TRT_FLOW + "sq", 0.004),
            ("int4_wo", TRT_FLOW + "wo", 0.006),
        )
    ]
    table = pd.DataFrame(rows)
    fixed = graph_latency_ms(table)
    expected = table["latency"] - 0.004 * table["kernel_source"].str.startswith(TRT_FLOW)
    assert fixed.to_numpy() == pytest.approx(expected.to_numpy())


def _left_out(kernels, measured_dir, path: str, dtype: str, at_least: int):
    """(raw table, its loaded rows, its raw rows of `dtype`): those are there in the file, none
    of them is loaded, and every other row of the table is."""
    raw = pd.read_parquet(measured_dir / path)
    out = raw[raw["gemm_dtype"] == dtype]
    assert len(out) > at_least
    rows = kernels[kernels.source == path]
    assert len(rows) == len(raw) - len(out) and not rows["quant"].eq(dtype).any()
    return raw, rows, out


def test_vllm_block_fp8_gemms_timed_eagerly_are_left_out(kernels, measured_dir):
    # aiconfigurator's vLLM collector timed block-FP8 GEMMs without a CUDA graph
    # (validate/aiconfigurator.py LEFT_OUT): the raw rows are there, the loaded table has none
    path = "aiconfigurator-h100/gemm/vllm/0.24.0/gemm_perf.parquet"
    raw, rows, block = _left_out(kernels, measured_dir, path, "fp8_block", 30_000)
    assert rows["quant"].eq("fp8").sum() == (raw["gemm_dtype"] == "fp8").sum()  # graph-timed
    # what gives them away in the table itself: a host floor under every shape. The fastest
    # vLLM block-FP8 call takes ~60 us at m = 1; SGLang's graph-timed DeepGEMM on the same GPU
    # runs its small calls in ~10 us, and vLLM's per-tensor FP8 GEMM its in ~5 us
    sglang = kernels[kernels.impl.str.startswith("sglang-0.5.14:sglang_deepgemm")]
    small = (block.m <= 16) & (block.n <= 4096) & (block.k <= 4096)
    assert block.loc[small, "latency"].min() * 1e-3 > 40e-6
    assert sglang.loc[(sglang.m <= 16) & (sglang.n <= 4096) & (sglang.k <= 4096),
                      "measured_s"].median() < 15e-6  # fmt: skip
    gemm = kernels[kernels.op.eq("gemm") & kernels.quant.eq("fp8_block")]
    assert len(gemm) and not gemm["impl"].str.startswith("vllm").any()  # no GPU keeps them


def test_sglang_int8_weight_only_rows_a_w8a8_chain_are_left_out(kernels, measured_dir):
    # SGLang 0.5.6.post2's `int8_wo` rows time an eager per-token int8 quantization (nine
    # kernels) and a W8A8 int8 GEMM (validate/aiconfigurator.py LEFT_OUT): the raw rows are
    # there, the loaded table has none, and the same table's other precisions are all kept
    path = "aiconfigurator-h100/gemm/sglang/0.5.6.post2/gemm_perf.parquet"
    raw, rows, _ = _left_out(kernels, measured_dir, path, "int8_wo", 9_000)
    assert rows["quant"].eq("fp8").sum() == (raw["gemm_dtype"] == "fp8").sum()
    # what gives them away in the table itself: at its smallest shapes a weight-only call that
    # reads half a bf16 GEMM's weights takes ~7x that GEMM (~10 launches under the graph), and
    # well over its FP8 GEMM, which quantizes its activations with one kernel of its own
    small = (raw.m <= 16) & (raw.n <= 512) & (raw.k <= 512)
    floor = raw[small].groupby("gemm_dtype")["latency"].median()
    assert floor["int8_wo"] > 5 * floor["bfloat16"]
    assert floor["int8_wo"] > 3 * floor["fp8"]
    # the one dense weight-only GEMM left: TensorRT-LLM's on the A100
    gemm = kernels[kernels.op.eq("gemm") & kernels.quant.eq("int8_wo")]
    assert set(gemm["gpu"]) == {"a100-sxm-80gb"} and gemm["impl"].str.startswith("trtllm").all()


@pytest.fixture(scope="module")
def moe(measured_dir):
    return load_moe(measured_dir)


STAND_IN_TABLES = (
    "aiconfigurator-h100/moe/vllm/0.24.0/moe_perf.parquet",
    "aiconfigurator-h100/moe/sglang/0.5.14/moe_perf.parquet",
    "aiconfigurator-rtx-pro-6000/moe/sglang/0.5.14/moe_perf.parquet",
)


@pytest.mark.parametrize("path", STAND_IN_TABLES)
def test_moe_rows_timed_with_a_stand_in_activation_are_left_out(kernels, moe, measured_dir, path):
    # Kimi-K3's MXFP4 experts timed through Marlin with SiLU standing in for SiTU
    # (validate/aiconfigurator.py LEFT_OUT_MOE_KERNELS): the table's own notes say so, the raw
    # rows are there, none is loaded, and every other row of the table is
    meta = (measured_dir / path).with_name("collection_meta.yaml").read_text()
    assert "situ-as-silu" in meta.lower() or "situ_as_silu" in meta.lower()
    raw = pd.read_parquet(measured_dir / path)
    stand_in = raw["kernel_source"].str.endswith("_situ_as_silu")
    assert stand_in.sum() > 400
    assert set(raw.loc[stand_in, "num_experts"]) == {896}  # Kimi-K3's, no other model's
    rows = moe[moe.source == path]
    assert len(rows) == (~stand_in).sum() and not rows["impl"].str.contains("situ").any()
    assert not kernels["impl"].str.contains("situ").any()  # nor anything built on the loader
    # the B300's Kimi-K3 rows ran SiTU itself (vLLM's Kimi-K3 preview build): kept
    b300 = kernels[(kernels.gpu == "b300") & (kernels.num_experts == 896)
                   & (kernels.quant == "w4a16_mxfp4")]  # fmt: skip
    assert len(b300) > 400 and b300["impl"].str.contains("marlin").all()


def test_the_copy_rule_tells_resident_gemms_from_cold_ones(kernels):
    # The RTX PRO 6000's bf16 GEMVs (m = 1) at one weight size, SGLang against TensorRT-LLM:
    # where the rule says both keep their copies in L2 they run alike, where it says one does
    # (TensorRT-LLM's 5 copies of 25.2 MB, its 2 of 67.1 MB) that one runs in half the time
    rows = kernels[(kernels.gpu == "rtx-pro-6000") & (kernels.m == 1)
                   & (kernels.quant == "bfloat16")].copy()  # fmt: skip
    rows["engine"] = rows["impl"].str.split("-").str[0]
    rows["resident"] = rows["replay_copies"] * rows["n"] * rows["k"] * 2 <= 134217728
    for n, k in ((4096, 2048), (3072, 4096), (4096, 8192)):
        shape = rows[(rows.n == n) & (rows.k == k)].set_index("engine")
        sglang, trtllm = shape.loc["sglang"], shape.loc["trtllm"]
        if sglang["resident"] == trtllm["resident"]:
            assert (n, k) == (4096, 2048) and trtllm["resident"]
            assert trtllm["measured_s"] == pytest.approx(sglang["measured_s"], rel=0.2)
        else:
            assert trtllm["resident"] and not sglang["resident"]
            assert trtllm["measured_s"] < 0.6 * sglang["measured_s"]


@pytest.mark.parametrize("fn", [{"a": 1, "b": 2}, lambda v: f"<{v}>"])
def test_a_map_over_distinct_values_is_the_row_by_row_map(fn: object) -> None:
    values = pd.Series(["b", "a", None, "b", "c", "a"], index=[7, 5, 3, 1, 0, 2], name="device")
    expected = values.map(fn)  # type: ignore[arg-type]
    pd.testing.assert_series_equal(map_distinct(values, fn), expected)  # type: ignore[arg-type]
