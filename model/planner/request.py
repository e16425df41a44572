"""Plain CLI-style values (comma lists, 'all', length specs, GPU=USD prices) -> a validated
SweepSpace and ServingWorkload, with one-line errors. The CLI stays a thin shell around this.

Nothing given is dropped without a word: an empty list item, an unknown dtype, a price for a GPU
that does not exist or a sweep with nothing to try is an error naming the value. The sweep's
size is estimated before it runs and refused above MAX_CONFIGS (about 2 GB of working memory:
a measured 215 M configurations took 8.5 GB, about 40 bytes each), saying how to narrow it.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import ValidationError

from hardware.errors import RooflensError, validation_message
from hardware.presets import get_gpu, gpu_ids
from model.dtypes import STORAGE_DTYPES
from model.planner.prices import default_prices, parse_price, read_price_file
from model.planner.serving import MODES
from model.planner.sweep import SweepSpace
from model.planner.workload import SLO, LengthDist, ServingWorkload

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


def _items(text: str, what: str) -> list[str]:
    """Comma-separated items; an empty one (`bf16,,fp8`) is a slip, not something to skip."""
    items = [v.strip() for v in text.split(",")]
    if not text.strip() or any(not v for v in items):
        raise RooflensError(f"{what}: empty item in '{text}'; separate values by single commas")
    return items


def int_list(text: str, what: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in _items(text, what))
    except ValueError:
        raise RooflensError(
            f"{what}: expected integers separated by commas, got '{text}'"
        ) from None
    if not values or min(values) < 1:
        raise RooflensError(f"{what}: expected positive integers, got '{text}'")
    return values


def str_list(
    text: str, what: str = "list", allowed: Sequence[str] | None = None
) -> tuple[str, ...]:
    values = tuple(_items(text, what))
    bad = [v for v in values if allowed is not None and v not in allowed]
    if bad:
        raise RooflensError(f"{what}: '{bad[0]}' is not one of {', '.join(allowed or ())}")
    return values


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


def gpu_list(text: str, prices: dict[str, float]) -> tuple[str, ...]:
    """'all' = every preset with a price; otherwise ids (or spec files) checked to exist."""
    if text.strip() == "all":
        return tuple(g for g in gpu_ids() if g in default_prices() or g in prices)
    gpus = str_list(text, "--gpus")
    for g in gpus:
        get_gpu(g)
    return gpus


def build_request(
    *,
    model: str,
    gpus: str,
    rate: float,
    prompt_len: str,
    output_len: str,
    prompt_len_p99: float | None = None,
    output_len_p99: float | None = None,
    ttft_slo: float | None = None,
    tpot_slo: float | None = None,
    ttft_slo_mean: float | None = None,
    tpot_slo_mean: float | None = None,
    tp: str = "1,2,4,8",
    pp: str = "1",
    ep: str = "1",
    weight_dtypes: str = "bf16,fp8",
    kv_dtypes: str = "bf16,fp8",
    max_batch: str | None = None,
    modes: str = "colocated,chunked,disaggregated",
    max_gpus: int = 64,
    chunk: int = 2048,
    profile: str = "calibrated",
    opts: Sequence[str] = (),
    sweep_opts: Sequence[str] = (),
    prices: Sequence[str] = (),
    price_file: str | None = None,
) -> tuple[SweepSpace, ServingWorkload]:
    overrides = read_price_file(price_file) if price_file else {}
    overrides.update(dict(parse_price(p) for p in prices))
    try:
        workload = ServingWorkload(
            rate_per_s=rate,
            prompt=LengthDist.parse(prompt_len, prompt_len_p99),
            output=LengthDist.parse(output_len, output_len_p99),
            slo=SLO(
                ttft_p99_s=ttft_slo,
                tpot_p99_s=tpot_slo,
                ttft_mean_s=ttft_slo_mean,
                tpot_mean_s=tpot_slo_mean,
            ),
            prices_usd_per_gpu_hour=overrides,
        )
        extra = {"max_batches": int_list(max_batch, "--max-batch")} if max_batch else {}
        space = SweepSpace(
            model=model,
            gpus=gpu_list(gpus, overrides),
            tp=int_list(tp, "--tp"),
            pp=int_list(pp, "--pp"),
            ep=int_list(ep, "--ep"),
            weight_dtypes=str_list(weight_dtypes, "--weight-dtypes", STORAGE_DTYPES),
            kv_dtypes=str_list(kv_dtypes, "--kv-dtypes", STORAGE_DTYPES),
            modes=str_list(modes, "--modes", MODES),
            max_gpus=max_gpus,
            chunk_tokens=chunk,
            profile=profile,
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
