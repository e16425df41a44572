"""The columns of a kernel-call table (model/pricing/kernel_columns.py, DESIGN.md's CSV
contract): dtype names normalised from torch's spellings, sizes checked in one line naming the
row and the column, group sizes whole numbers defaulting to 128, and MoE layouts that divide."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rooflens.hardware.errors import RooflensError
from rooflens.model.pricing.kernel_columns import (
    MAX_SIZE,
    Group,
    Rows,
    check_moe_layout,
    dtype_column,
    filled,
    group_sizes,
    normalize_dtype,
)


@pytest.mark.parametrize(
    ("given", "name"),
    [("bfloat16", "bf16"), (" Float16 ", "fp16"), ("float8_e4m3fn", "fp8"), ("int4", "int4")],
)
def test_dtypes_are_normalised(given: str, name: str) -> None:
    assert normalize_dtype(given, "dtype", 0) == name


def test_an_unknown_dtype_names_its_row_and_column() -> None:
    with pytest.raises(RooflensError, match=r"row 3: kv_dtype='fp7' is not a dtype"):
        normalize_dtype("fp7", "kv_dtype", 3)


def test_empty_dtype_cells_take_the_fallback() -> None:
    frame = pd.DataFrame({"op": "gemm", "weight_dtype": ["int4", None, ""]})
    fallback = pd.Series(["bf16"] * 3)
    assert dtype_column(frame, "weight_dtype", fallback).tolist() == ["int4", "bf16", "bf16"]


def test_sizes_must_be_positive_and_fit_int32() -> None:
    frame = pd.DataFrame({"m": [4, 8], "n": [1, MAX_SIZE + 1], "k": [0, 3]})
    g = Group(frame, "gemm", "bf16", "")
    assert g.col("m").tolist() == [4.0, 8.0]
    with pytest.raises(RooflensError, match=r"row 1: n must be a positive number ≤ 2,147,483,647"):
        g.col("n")
    with pytest.raises(RooflensError, match=r"row 0: k must be a positive number"):
        g.col("k")
    with pytest.raises(RooflensError, match="op gemm needs a 'batch' column"):
        g.col("batch")


def test_group_sizes_are_whole_and_default_to_128() -> None:
    frame = pd.DataFrame({"group_size": [64, None, ""]})
    assert group_sizes(frame).tolist() == [64, 128, 128]
    assert group_sizes(pd.DataFrame({"m": [1, 2]})).tolist() == [128, 128]
    with pytest.raises(RooflensError, match="row 0: group_size must be a whole number"):
        group_sizes(pd.DataFrame({"group_size": [1.5]}))


def test_moe_layouts_must_divide() -> None:
    check_moe_layout(14336, 8, 2, 2, 4, "ok")  # Mixtral: TP 2 over F, EP 4 over 8 experts
    for args, match in (((14336, 8, 2, 3, 1), "moe_tp_size must divide inter_size"),
                        ((14336, 8, 2, 1, 3), "moe_ep_size must divide num_experts"),
                        ((14336, 8, 9, 1, 1), "topk must not exceed num_experts")):  # fmt: skip
        with pytest.raises(RooflensError, match=match):
            check_moe_layout(*args, where="row 0")


@pytest.mark.parametrize(
    "column",
    [
        pd.Series([1.0, float("nan"), 3.0]),
        pd.Series(["a", " ", None, "", "b", "  c "]),
        pd.Series([1, "", None, " 2", float("nan")], dtype=object),
        pd.Series([True, False]),
    ],
)
def test_a_filled_cell_is_one_that_is_neither_missing_nor_blank_text(column: pd.Series) -> None:
    # second route: every cell turned into text, as the readers did before `filled`
    row_by_row = column.notna() & (column.astype(str).str.strip() != "")
    assert filled(column).tolist() == row_by_row.tolist()


def test_a_group_reads_its_rows_columns_and_labels_from_a_view() -> None:
    frame = pd.DataFrame({"m": [4.0, 8.0, 16.0, 0.0], "k": [1.0, 2.0, 3.0, 4.0]})
    rows = Rows(frame, np.array([1, 3]))
    grp = Group(rows, "gemm", "bf16", "bf16")
    assert grp.optional("k").tolist() == [2.0, 4.0]
    with pytest.raises(RooflensError, match=r"row 3: m must be a positive number"):
        grp.col("m")  # the error names the table's row, not the group's position
