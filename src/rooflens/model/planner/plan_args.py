"""Plain CLI-style values (comma lists, 'all', length specs, GPU=USD prices) -> a validated
SweepSpace and ServingWorkload, with one-line errors; the CLI is a thin shell around this.
Nothing given is dropped without a word: an empty list item, an unknown dtype, a price for a GPU
that does not exist or a sweep with nothing to try is an error naming the value. The sweep's
size is estimated first and refused above MAX_CONFIGS (~2 GB of working memory: 215 M
configurations took 8.5 GB, ~40 bytes each), saying how to narrow it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from rooflens.hardware.errors import RooflensError, validation_message
from rooflens.hardware.presets import gpu_ids
from rooflens.model.planner.gpu_prices import parse_price, price_per_gpu_hour, read_price_file
from rooflens.model.planner.plan_lists import (
    SCENARIO_OPTIONS,
    engine_list,
    gpu_list,
    int_list,
    listed,
    scenario_values,
    str_list,
)
from rooflens.model.planner.serving import MODES
from rooflens.model.planner.serving_profile import profile_terms
from rooflens.model.planner.space import SweepSpace
from rooflens.model.planner.trace import RequestTrace, TraceSource, read_trace
from rooflens.model.planner.workload import SLO, LengthDist, ServingWorkload

MAX_CONFIGS = 50_000_000  # about 2 GB at ~40 bytes a configuration
# The simulation holds ~80 bytes per request (8 GB measured at 1e8): 2e7 is about 1.6 GB.
MAX_SIM_REQUESTS = 20_000_000


def check_simulation(requests: int, seed: int) -> None:
    """Refuse a simulation that cannot run or would not fit in memory, before the sweep."""
    if not 0 <= requests <= MAX_SIM_REQUESTS:
        raise RooflensError(
            f"simulated requests must be in 0..{MAX_SIM_REQUESTS:,} (~1.6 GB), got {requests:,}"
        )
    if seed < 0:
        raise RooflensError(f"the simulation's seed must be ≥ 0, got {seed}")


def estimated_configs(space: SweepSpace) -> int:
    """Configurations the sweep will price: per group and scheduler, replica counts × batch
    caps (sweep.configs), disaggregated counting prefill/decode splits n_p + n_d ≤ R."""
    caps, total = len(space.max_batches), 0
    for group in space.groups():
        r = space.max_gpus // group.gpus_per_replica
        for mode in space.modes:
            total += caps * (r * (r - 1) // 2 if mode == "disaggregated" else r)
    return total


def check_size(space: SweepSpace) -> None:
    """Refuse a sweep with nothing to try, or one too big for memory, saying how to narrow it."""
    if not space.groups():
        raise RooflensError(
            f"nothing to try: no TP × PP × EP in --tp/--pp/--ep fits --max-gpus {space.max_gpus}"
            " (and EP must be a multiple of TP)"
        )
    n = estimated_configs(space)
    if n > MAX_CONFIGS:
        raise RooflensError(
            f"the sweep would price about {n:,} configurations (over {MAX_CONFIGS:,}, ~2 GB); "
            "narrow it: lower --max-gpus, fewer --gpus, --tp/--max-batch values or --modes"
        )


def build_request(
    *,
    model: str,
    gpus: str,
    rate: float | None = None,
    prompt_len: str | None = None,
    output_len: str | None = None,
    prompt_len_p99: float | None = None,
    output_len_p99: float | None = None,
    ttft_slo: float | None = None,
    tpot_slo: float | None = None,
    ttft_slo_mean: float | None = None,
    tpot_slo_mean: float | None = None,
    tp: str = SCENARIO_OPTIONS["--tp"][1],
    pp: str = SCENARIO_OPTIONS["--pp"][1],
    ep: str = SCENARIO_OPTIONS["--ep"][1],
    weight_dtypes: str = SCENARIO_OPTIONS["--weight-dtypes"][1],
    kv_dtypes: str = SCENARIO_OPTIONS["--kv-dtypes"][1],
    max_batch: str | None = None,
    modes: str = listed("modes"),
    max_gpus: int = SweepSpace.default("max_gpus"),
    chunk: int = int(SCENARIO_OPTIONS["--chunk"][1]),
    profile: str = SCENARIO_OPTIONS["--profile"][1],
    engine: str = SCENARIO_OPTIONS["--engine"][1],
    opts: Sequence[str] = (),
    sweep_opts: Sequence[str] = (),
    prices: Sequence[str] = (),
    price_file: str | None = None,
    serving_profile: str | None = None,
    trace: TraceSource | None = None,
    objective: str = SweepSpace.default("objective"),
    prefix_hit_rate: float | None = None,
    kv_offload: str = SweepSpace.default("kv_offload"),
    prefill_gpus: str | None = None,
    decode_gpus: str | None = None,
) -> tuple[SweepSpace, ServingWorkload]:
    rate, prompt_len, output_len, lengths = traffic(rate, prompt_len, output_len, trace)
    overrides = read_price_file(price_file) if price_file else {}
    overrides.update(dict(parse_price(p) for p in prices))
    try:
        workload = ServingWorkload(
            rate_per_s=rate,
            prompt=lengths[0] or LengthDist.parse(prompt_len, prompt_len_p99),
            output=lengths[1] or LengthDist.parse(output_len, output_len_p99),
            slo=SLO(
                ttft_p99_s=ttft_slo,
                tpot_p99_s=tpot_slo,
                ttft_mean_s=ttft_slo_mean,
                tpot_mean_s=tpot_slo_mean,
            ),
            prices_usd_per_gpu_hour=overrides,
            trace=lengths[2],
            **prefix_terms(prefix_hit_rate, lengths[2], prompt_len, prompt_len_p99),
        )
        extra: dict[str, Any] = (
            {"max_batches": int_list(max_batch, "--max-batch")} if max_batch else {}
        )
        engines = engine_list(engine)
        if serving_profile:
            caps, every = extra.get("max_batches"), (*opts, *sweep_opts)
            extra.update(profile_terms(serving_profile, caps, every, engines))
        extra["objective"] = objective
        extra["kv_offload"] = kv_offload
        if kv_offload != "none" and not workload.prefix_hit_rate:
            raise RooflensError(f"--kv-offload {kv_offload} moves the prefix cache: give "
                                "--prefix-hit-rate, or a --trace with prefix ids")  # fmt: skip
        extra.update(mixed_gpus(prefill_gpus, decode_gpus, modes, overrides))
        space = SweepSpace(
            model=model,
            gpus=gpu_list(gpus, overrides),
            tp=scenario_values(tp, "--tp"),
            pp=scenario_values(pp, "--pp"),
            ep=scenario_values(ep, "--ep"),
            weight_dtypes=scenario_values(weight_dtypes, "--weight-dtypes"),
            kv_dtypes=scenario_values(kv_dtypes, "--kv-dtypes"),
            modes=str_list(modes, "--modes", MODES),
            max_gpus=max_gpus,
            chunk_tokens=chunk,
            profile=profile,
            engines=engines,
            opts=tuple(opts),
            sweep_opts=tuple(sweep_opts),
            **extra,
        )
    except ValidationError as exc:
        raise RooflensError(validation_message(exc, "plan request")) from None
    unknown = sorted(set(overrides) - set(gpu_ids()) - set(space.gpus))
    if unknown:
        raise RooflensError(
            f"--price {unknown[0]}: not a GPU preset or one of --gpus; see `rooflens list gpus`"
        )
    check_size(space)
    return space, workload


def traffic(
    rate: float | None, prompt_len: str | None, output_len: str | None, trace: TraceSource | None
) -> tuple[float, str, str, tuple[LengthDist | None, LengthDist | None, RequestTrace | None]]:
    """The load from --rate and the length options, or from a --trace file, never both."""
    if trace is None:
        if rate is None:
            raise RooflensError("give the load: --rate REQUESTS_PER_S, or --trace FILE")
        return rate, prompt_len or "512", output_len or "128", (None, None, None)
    for flag, value in (("--rate", rate), ("--prompt-len", prompt_len),
                        ("--output-len", output_len)):  # fmt: skip
        if value is not None:
            raise RooflensError(f"{flag} and --trace both describe the load; drop {flag} (the "
                                "trace's times and lengths are replayed as given)")  # fmt: skip
    t = trace if isinstance(trace, RequestTrace) else read_trace(trace)
    prompt = LengthDist(kind="empirical", samples=t.input_len)
    output = LengthDist(kind="empirical", samples=t.output_len)
    return t.rate_per_s, "", "", (prompt, output, t)


def prefix_terms(
    hit: float | None, trace: RequestTrace | None, prompt_len: str, prompt_len_p99: float | None
) -> dict[str, float]:
    """The prefix cache's hit rate and pool (kv_tiers.py): from --prefix-hit-rate (one shared
    prefix of that share of the mean prompt) or from a trace's prefix ids, never both."""
    if trace is not None:
        if hit is not None:
            raise RooflensError(
                "--prefix-hit-rate and --trace both give the prefix-cache hit rate; drop "
                "--prefix-hit-rate (the trace's prefix ids give it)"
            )
        return {"prefix_hit_rate": trace.prefix_hit_rate(),
                "prefix_pool_tokens": trace.prefix_pool_tokens()}  # fmt: skip
    if hit is None or hit == 0:
        return {}
    if not 0 < hit < 1:
        raise RooflensError(f"--prefix-hit-rate must be in [0, 1), got {hit}")
    mean = LengthDist.parse(prompt_len, prompt_len_p99).mean()
    return {"prefix_hit_rate": hit, "prefix_pool_tokens": hit * mean}


def mixed_gpus(prefill: str | None, decode: str | None, modes: str,
               prices: dict[str, float]) -> dict[str, tuple[str, ...]]:  # fmt: skip
    """--prefill-gpus and --decode-gpus: both or neither, each GPU priced, a pair of different
    types possible, and the disaggregated scheduler swept."""
    if prefill is None and decode is None:
        return {}
    if prefill is None or decode is None:
        raise RooflensError("--prefill-gpus and --decode-gpus go together (e.g. --prefill-gpus "
                            "h100-sxm --decode-gpus l40s)")  # fmt: skip
    p, d = gpu_list(prefill, prices), gpu_list(decode, prices)
    for gpu in (*p, *d):
        price_per_gpu_hour(gpu, prices)
    if not any(a != b for a in p for b in d):
        raise RooflensError(
            "--prefill-gpus and --decode-gpus name the same GPU only; mixed "
            "pairs need two types (one type is the disaggregated scheduler)"
        )
    if "disaggregated" not in str_list(modes):
        raise RooflensError("--prefill-gpus/--decode-gpus need the disaggregated scheduler in "
                            "--modes")  # fmt: skip
    return {"prefill_gpus": p, "decode_gpus": d}
