# A Triton kernel as a model's custom op writes one: each program copies one row of `in` to the row
# `rows[row]` names in `out`, scaled. One entry of `rows` is stale, far past `out`, and the store faults.
import triton
import triton.language as tl


@triton.jit
def scatter_rows_kernel(out_ptr, in_ptr, rows_ptr, n_cols, scale, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    dest = tl.load(rows_ptr + row)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    values = tl.load(in_ptr + row * n_cols + cols, mask=mask)
    tl.store(out_ptr + dest * n_cols + cols, values * scale, mask=mask)
