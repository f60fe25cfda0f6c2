"""The ops that read complex values: those with complex kernels in Paddle 3.3.1 (its registry of op kernels,
paddle.base.core._get_all_register_op_kernels) whose gradc kernels compute the same, and the ops that run blocks or
hold values without a kernel of their own. Any other op reading a complex var is refused (as Paddle refuses most of
them) rather than left to numpy, which orders complex values by their real parts (relu, reduce_max, top_k), drops
their imaginary parts (svd, qr, matrix_power) or takes a real formula's branches (logsigmoid, hard_swish)."""

from __future__ import annotations

from ..ir import COMPLEX_DTYPES, Block, OpDesc, dtype_name

TAKES_COMPLEX = frozenset({
    "abs", "angle", "as_real", "assign", "assign_value", "broadcast_tensors", "cast", "concat", "conditional_block",
    "conj", "cos", "cross", "cumprod", "cumsum", "diag_v2", "diagonal", "dot",
    "eig", "eigvals", "eigvalsh", "einsum", "elementwise_add",
    "elementwise_div", "elementwise_mul", "elementwise_pow", "elementwise_sub", "empty", "equal", "exp",
    "expand_v2", "eye", "feed", "fetch", "fft_c2c", "fft_c2r", "fill_any_like", "fill_constant",
    "fill_diagonal_tensor", "fill_zeros_like", "flatten_contiguous_range", "flip", "fold", "frame", "gather",
    "gather_nd", "gaussian_random", "imag", "index_put", "index_sample", "index_select", "isfinite_v2", "isinf_v2",
    "isnan_v2", "kron", "lod_array_length", "log", "logical_and", "logical_not", "logical_or", "logical_xor",
    "lookup_table_v2", "masked_fill", "masked_select", "matmul_v2", "matrix_rank", "matrix_rank_atol_rtol",
    "mean", "meshgrid", "not_equal", "overlap_add",
    "pad", "pad3d", "pow", "pylayer", "read_from_array", "real", "reduce_all", "reduce_any", "reduce_mean",
    "reduce_prod", "reduce_sum", "reshape", "reshape2", "roll", "round", "scale", "select_input", "select_output",
    "set_value", "shape", "sigmoid", "sign", "silu", "sin", "size", "slice", "softsign", "split", "sqrt", "square",
    "squeeze2", "stack", "strided_slice", "sum", "tanh", "tensor_array_to_tensor", "tile", "trace", "transpose",
    "transpose2", "tril_triu", "unbind", "uniform_random", "unsqueeze2", "unstack", "where", "where_index", "while",
    "write_to_array",
})


# the slots of those ops that may hold complex values; the others hold indices, sizes, axes, scales, masks or flags
COMPLEX_SLOTS = frozenset({"X", "Y", "Input", "Operands", "W", "X_W", "x", "value", "ValueTensor", "ValuesTensor"})


def complex_input_problem(block: Block, op: OpDesc) -> str | None:
    """What is wrong with ``op`` reading a complex var, if it does where its kernel has no complex form (a grad op
    reads what its forward op did: not judged here)."""
    if "_grad" in op.type:
        return None
    takes = op.type in TAKES_COMPLEX
    for slot, args in op.inputs.items():
        if takes and slot in COMPLEX_SLOTS:
            continue
        for name in args:
            var = block.find_var(name)
            if var is not None and var.dtype in COMPLEX_DTYPES:
                what = f"{op.type}'s {slot} takes real values only" if takes else \
                    f"{op.type} takes real values only (its kernel has no complex form)"
                return f"{what}, but its input {slot} '{name}' is {dtype_name(var.dtype)}"
    return None


def declares_complex(block: Block) -> bool:
    """Whether the block or an ancestor, where its ops' vars live, declares a complex var: a real program's plan
    sweeps its vars once and judges no op."""
    scope: Block | None = block
    while scope is not None:
        if any(var.dtype in COMPLEX_DTYPES for var in scope.vars.values()):
            return True
        scope = scope.parent
    return False


def is_complex(g, name: str) -> bool:
    """Whether ``name`` is a complex var of the block a grad maker's context ``g`` works in."""
    var = g.block.find_var(name) if g.block is not None else None
    return var is not None and var.dtype in COMPLEX_DTYPES
