"""Compile every kernel for an NVIDIA GPU on a machine without one (Triton ahead-of-time).

The interpreter checks what the kernels compute, not what only the compiler checks: tl.dot
tile minimums, bf16 lowering, constexpr plumbing, shared memory. Triton lowers a kernel to a
cubin for a named target without a driver (ptxas ships in the Triton wheel), so this script
compiles one representative launch of each kernel (with --all-configs, every autotune config)
and checks that the fixed-config kernels fit the target's shared memory. Run it with
TRITON_INTERPRET unset (the kernels must be decorated as JIT functions):

    env -u TRITON_INTERPRET python tests/kernels/compile_check.py --arch 90 --dtype bf16

Launches are specialised the way Triton's JIT specialises a real call: pointers and strides
16-aligned, unit strides folded to constants (without that the loads cannot be vectorised and
the software pipeliner, hence the shared-memory footprint, differs from a real launch).
Relies on `triton.compiler.ASTSource` and `triton.backends.compiler.GPUTarget` (Triton 3.x;
checked on 3.6 and 3.9). Exits non-zero if any kernel fails.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from rooflens.kernels import (
    decode_attention,
    flash_attention,
    gemm,
    paged_decode_attention,
    rmsnorm,
    split_kv,
    splitk,
    w4a16_gemm,
    w8a16_gemm,
)
from rooflens.kernels.common import torch_dtype

# Maximum dynamic shared memory per block (CUDA programming guide, compute capabilities).
SHARED_MEMORY_BYTES = {80: 166912, 86: 101376, 89: 101376, 90: 232448, 100: 232448}
SCALAR_FLOATS = {
    "qk_scale",
    "eps",
    "out_scale",
}  # every other non-pointer, non-constexpr argument is i32


class Launch(NamedTuple):
    label: str
    kernel: object  # JITFunction or Autotuner
    pointers: dict[str, str]  # argument -> Triton pointer type, e.g. "*bf16"
    constexprs: dict
    num_warps: int
    num_stages: int
    unit: tuple[str, ...] = ()  # integer arguments that are 1 in a real call (unit strides)
    aligned: tuple[str, ...] = ()  # integer arguments besides strides that are multiples of 16


def _configs(kernel, all_configs: bool) -> list:
    return kernel.configs if all_configs else kernel.configs[:1]


def _gemm_launches(p: str, all_configs: bool) -> Iterator[Launch]:
    for label, kernel in (("gemm", gemm._gemm_kernel), ("gemm v2", gemm._gemm_kernel_v2)):
        for cfg in _configs(kernel, all_configs):
            yield Launch(
                f"{label} {cfg.kwargs}",
                kernel,
                {"x_ptr": p, "w_ptr": p, "y_ptr": p},
                dict(cfg.kwargs, INPUT_PRECISION="ieee"),
                cfg.num_warps,
                cfg.num_stages,
                unit=("stride_xk", "stride_wk", "stride_yn"),
                aligned=("N", "K"),
            )
    yield from _splitk_launches(p, all_configs)
    if p == "*fp32":
        return
    for cfg in _configs(w8a16_gemm._w8a16_gemm_kernel, all_configs):
        consts = dict(cfg.kwargs, GROUP_SIZE=128, BLOCK_K=128)
        unit = ("stride_xk", "stride_sg", "stride_yn")
        yield Launch(
            f"w8a16_gemm {cfg.kwargs}",
            w8a16_gemm._w8a16_gemm_kernel,
            {"x_ptr": p, "q_ptr": "*i8", "s_ptr": p, "y_ptr": p},
            consts,
            cfg.num_warps,
            cfg.num_stages,
            unit=(*unit, "stride_qk"),
            aligned=("N", "K"),
        )
        yield Launch(
            f"w4a16_gemm {cfg.kwargs}",
            w4a16_gemm._w4a16_gemm_kernel,
            {"x_ptr": p, "p_ptr": "*u8", "s_ptr": p, "z_ptr": "*u8", "y_ptr": p},
            consts,
            cfg.num_warps,
            cfg.num_stages,
            unit=(*unit, "stride_pk", "stride_zg"),
            aligned=("N", "K"),
        )


def _splitk_launches(p: str, all_configs: bool) -> Iterator[Launch]:
    """The split-K kernel at a decode M (16-row tiles) and, quantised, at a prefill M."""
    weights = {16: p, 8: "*i8", 4: "*u8"} if p != "*fp32" else {16: p}
    unit = ("stride_xk", "stride_wk", "stride_sg", "stride_zg", "stride_yn")
    for bits, w_type in weights.items():
        for m, splits in [(1, 1), (1, 4)] + ([(256, 1)] if bits != 16 else []):
            block_m, block_n, block_k = splitk.tiles(m, bits, 128)
            tiles = {"BLOCK_M": block_m, "BLOCK_N": block_n, "BLOCK_K": block_k}
            consts = dict(SPLITS=splits, W_BITS=bits, GROUP_SIZE=128, INPUT_PRECISION="ieee")
            y_type = p if splits == 1 else "*fp32"
            pointers = {"x_ptr": p, "w_ptr": w_type, "s_ptr": p, "z_ptr": "*u8", "y_ptr": y_type}
            kept = splitk._enough_warps(splitk._splitk_kernel.configs, {}, **tiles)
            for cfg in kept if all_configs else kept[:1]:
                label = f"splitk W{bits} M={m} splits={splits} {cfg.num_warps}w{cfg.num_stages}s"
                yield Launch(label, splitk._splitk_kernel, pointers, consts | tiles,
                             cfg.num_warps, cfg.num_stages, unit=unit,
                             aligned=("N", "K", "k_per_split"))  # fmt: skip
    yield Launch("splitk sum of splits", splitk._sum_splits_kernel,
                 {"part_ptr": "*fp32", "y_ptr": p}, dict(SPLITS=4, BLOCK=1024), 4, 1,
                 unit=("stride_yn",), aligned=("N",))  # fmt: skip


def _attention_launches(dtype: str, arch: int = 90, all_configs: bool = False) -> Iterator[Launch]:
    p = f"*{dtype}"
    partials = {"o_part_ptr": "*fp32", "lse_part_ptr": "*fp32"}
    for head_dim in (64, 128, 256):
        cfg = dict(flash_attention._launch_config(head_dim, torch_dtype(dtype)))
        warps, stages = cfg.pop("num_warps"), cfg.pop("num_stages")
        flash = dict(GQA_GROUP=4, INPUT_PRECISION="ieee", HEAD_DIM=head_dim)
        yield Launch(
            f"flash_attention v1 D={head_dim}",
            flash_attention._flash_attention_kernel,
            {"q_ptr": p, "k_ptr": p, "v_ptr": p, "o_ptr": p},
            dict(cfg, **flash, LONGEST_FIRST=False),
            warps,
            stages,
        )
        size = torch_dtype(dtype).itemsize
        fitting = flash_attention._fits(
            flash_attention._V2_CONFIGS, {"q_ptr": _Elem(size)}, HEAD_DIM=head_dim
        )
        for v2 in fitting if all_configs else fitting[:1]:
            yield Launch(
                f"flash_attention v2 D={head_dim} {v2.kwargs} {v2.num_warps}w{v2.num_stages}s",
                flash_attention._flash_attention_v2,
                {"q_ptr": p, "k_ptr": p, "v_ptr": p, "o_ptr": p},
                dict(v2.kwargs, **flash, LONGEST_FIRST=True),
                v2.num_warps,
                v2.num_stages,
            )
        block_n = split_kv._block_n(head_dim)
        kv = "*fp8e4nv" if dtype != "fp32" and arch >= 89 else p
        yield from _decode_launches(p, p, head_dim, block_n, dtype, partials)
        if kv != p:  # fp8 KV cache, converted in registers
            yield from _decode_launches(p, kv, head_dim, block_n, dtype, partials)
        yield Launch(
            f"decode_attention combine D={head_dim}",
            split_kv._combine_kernel,
            dict(partials, o_ptr=p),
            dict(NUM_SPLITS=300, BLOCK_SPLITS=32, HEAD_DIM=head_dim),
            4,
            3,
        )


class _Elem:
    """Stands in for a tensor where only element_size() is read (flash_attention._fits)."""

    def __init__(self, size: int) -> None:
        self.size = size

    def element_size(self) -> int:
        return self.size


def _decode_launches(p, kv, head_dim, block_n, dtype, partials) -> Iterator[Launch]:
    """The contiguous and paged split kernels over a cache of pointer type `kv`."""
    tag = " fp8 KV" if kv != p else ""
    split = dict(
        GQA_GROUP=8, BLOCK_H=16, HEAD_DIM=head_dim, BLOCK_N=block_n, INPUT_PRECISION="ieee"
    )
    stages = 2 if dtype == "fp32" else 3
    yield Launch(
        f"decode_attention split D={head_dim}{tag}",
        decode_attention._decode_split_kernel,
        {"q_ptr": p, "k_ptr": kv, "v_ptr": kv, "kv_lens_ptr": "*i32", **partials},
        split,
        4,
        stages,
        unit=("stride_ls",),
        aligned=("split_len",),
    )
    yield Launch(
        f"paged_decode_attention split D={head_dim}{tag}",
        paged_decode_attention._paged_split_kernel,
        {"q_ptr": p, "k_ptr": kv, "v_ptr": kv, "block_table_ptr": "*i32", "kv_lens_ptr": "*i32"}
        | partials,
        dict(split, PAGE_SIZE=16),
        4,
        stages,
        unit=("stride_ls",),
        aligned=("split_len",),
    )


def launches(dtype: str, all_configs: bool, arch: int = 90) -> Iterator[Launch]:
    """Representative launches of every kernel with activations in `dtype`."""
    p = f"*{dtype}"
    yield from _gemm_launches(p, all_configs)
    yield from _attention_launches(dtype, arch, all_configs)
    yield Launch(
        "rmsnorm hidden=8192",
        rmsnorm._rmsnorm_kernel,
        {"x_ptr": p, "r_ptr": p, "w_ptr": p, "o_ptr": p, "r_out_ptr": p},
        dict(HAS_RESIDUAL=True, BLOCK_N=8192),
        16,
        3,
        aligned=("N",),
    )


def compile_launch(launch: Launch, arch: int):
    """The compiled kernel (its metadata holds the shared-memory bytes)."""
    autotuned = isinstance(launch.kernel, triton.runtime.Autotuner)
    fn = launch.kernel.fn if autotuned else launch.kernel
    constexprs = dict(launch.constexprs, **dict.fromkeys(launch.unit, 1))
    signature, attrs = {}, {}
    for index, name in enumerate(fn.arg_names):
        if name in constexprs:
            signature[name] = "constexpr"
            continue
        if name.endswith("_ptr"):
            signature[name] = launch.pointers[name]
        else:
            signature[name] = "fp32" if name in SCALAR_FLOATS else "i32"
        if name.endswith("_ptr") or name.startswith("stride_") or name in launch.aligned:
            attrs[(index,)] = [["tt.divisibility", 16]]
    source = ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs)
    options = {"num_warps": launch.num_warps, "num_stages": launch.num_stages}
    return triton.compile(source, target=GPUTarget("cuda", arch, 32), options=options)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", type=int, default=90, help="compute capability, e.g. 80 or 90")
    parser.add_argument("--dtype", choices=["fp16", "bf16", "fp32"], default="bf16")
    parser.add_argument("--all-configs", action="store_true", help="every autotune config")
    parser.add_argument("--verbose", action="store_true", help="print each kernel's smem")
    args = parser.parse_args(argv)
    limit = SHARED_MEMORY_BYTES.get(args.arch)
    failures = []
    for launch in launches(args.dtype, args.all_configs, args.arch):
        try:
            shared = compile_launch(launch, args.arch).metadata.shared
        except Exception as error:  # report every failure, not just the first
            failures.append(f"{launch.label}: {type(error).__name__}: {str(error)[:500]}")
            continue
        autotuned = isinstance(launch.kernel, triton.runtime.Autotuner)
        too_big = limit is not None and shared > limit
        if args.verbose or too_big:
            note = " (over the limit: the autotuner skips it)" if too_big and autotuned else ""
            print(f"sm_{args.arch} {args.dtype} {launch.label}: {shared} B shared{note}")
        if too_big and not autotuned:
            failures.append(
                f"{launch.label}: {shared} B shared memory > {limit} B on sm_{args.arch}"
            )
    for failure in failures:
        print(f"FAILED sm_{args.arch} {args.dtype} {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
