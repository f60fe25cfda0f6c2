"""The casts of mixed precision, as Paddle 3.3.1's cast_model_to_fp16 writes them on a CUDA build, and the lists
they follow (paddle/amp/amp_lists.py, paddle/static/amp/fp16_lists.py, with decorate's defaults): white ops compute in
float16 / bfloat16, black ops in float32, a gray op follows the op that wrote its inputs; the scale, bias and
statistics of normalisation ops stay float32. passes/amp.py is the pass that uses them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Container, Iterable
from dataclasses import dataclass

from .ir import FLOAT_DTYPES, Block, OpDesc, Program, VarType, roles
from .optimizers.emit import complete
from .registry import make_op, sub_block, sub_blocks_run
from .verify_shapes import loop_outer_writes

CONTROL_FLOW = frozenset({"conditional_block", "while"})   # ops that run a sub-block
TENSORS = frozenset({VarType.DENSE_TENSOR, VarType.SELECTED_ROWS, VarType.DENSE_TENSOR_ARRAY})

WHITE = frozenset({"conv2d", "einsum", "matmul", "matmul_v2", "linear_v2", "max_pool2d_with_index", "mul",
                   "fused_gemm_epilogue", "fused_rotary_position_embedding", "flash_attn"})
# float16 only: fake quantization, the fused transformer ops, and two fused ops of ResNet
WHITE_FLOAT16 = WHITE | {"fake_quantize_dequantize_abs_max", "fake_quantize_dequantize_moving_average_abs_max",
                         "fused_attention", "fused_feedforward", "resnet_unit", "fused_bn_add_activation"}
BLACK_DEFAULT = frozenset({
    "tan", "acos", "asin", "sinh", "cosh", "atanh", "tanh_shrink", "erfinv", "exp", "expm1", "log", "log10", "log2",
    "reciprocal", "rsqrt", "pow", "square", "reduce_sum", "mean", "reduce_mean", "reduce_prod", "cumprod", "cumsum",
    "dist", "pnorm", "frobenius_norm", "renorm", "group_norm", "layer_norm", "softmax", "softmin", "softplus",
    "log_softmax", "softmax_with_cross_entropy", "sigmoid_cross_entropy_with_logits", "c_softmax_with_cross_entropy",
    "c_softmax_with_multi_label_cross_entropy", "cross_entropy", "cross_entropy2", "nll_loss", "huber_loss",
    "triplet_margin_loss", "log_loss", "hsigmoid_loss", "margin_cross_entropy"})
# black at every level: O2 computes everything else in the low format
BLACK_ALWAYS = frozenset({"linear_interp_v2", "nearest_interp_v2", "bilinear_interp_v2", "bicubic_interp_v2",
                          "trilinear_interp_v2", "lookup_table", "lookup_table_v2", "scatter"})
GRAY = frozenset({
    "elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_div", "elementwise_max", "elementwise_min",
    "elementwise_pow", "elementwise_mod", "elementwise_floordiv", "batch_norm", "layer_norm", "tanh", "sigmoid",
    "top_k", "pool2d", "pool3d", "dropout", "relu", "relu6", "leaky_relu", "soft_relu", "flatten2", "stack",
    "unstack", "uniform_random", "uniform_random_batch_size_like", "gaussian_random", "slice", "rank", "scale",
    "transpose2", "reshape2", "gather", "fill_constant", "get_tensor_from_selected_rows", "sign", "cast",
    "fused_bn_add_activation", "c_identity", "c_concat", "all_reduce", "concat", "split", "fused_feedforward",
    "fused_attention", "fused_multi_transformer"})


def white_list(dtype: str) -> frozenset[str]:
    return WHITE_FLOAT16 if dtype == "float16" else WHITE


class _AllBut:
    """Every op type but a set's: level OD's black list (every op the device runs, less the white list)."""

    def __init__(self, kept: frozenset[str]):
        self.kept = kept

    def __contains__(self, op_type: str) -> bool:
        return op_type not in self.kept


@dataclass(frozen=True)
class AmpLists:
    """The lists of one decorate: white, black and gray, and ``forced``, the custom black list's ops, which Paddle
    also counts among the device's unsupported ops: kept float32 at every level, their parameters too."""

    white: frozenset[str]
    black: Container[str]
    gray: frozenset[str]
    forced: frozenset[str] = frozenset()


def amp_lists(level: str, dtype: str, custom_white: Iterable[str] = (), custom_black: Iterable[str] = ()) -> AmpLists:
    """Paddle's AutoMixedPrecisionLists with the custom lists moved in (decorate ignores them at OD), and O2's black
    list without the default black ops."""
    if level == "OD":
        return AmpLists(white_list(dtype), _AllBut(white_list(dtype)), GRAY)
    white, black, gray = set(white_list(dtype)), set(BLACK_DEFAULT | BLACK_ALWAYS), set(GRAY)
    for op_type in custom_white:
        (black if op_type in black else gray).discard(op_type)
        white.add(op_type)
    for op_type in custom_black:
        (white if op_type in white else gray).discard(op_type)
        black.add(op_type)
    if level == "O2":
        black -= BLACK_DEFAULT
    return AmpLists(frozenset(white), frozenset(black), frozenset(gray), frozenset(custom_black))


def keeps_float32_input(op_type: str, slot: str) -> bool:
    """A slot of a normalisation op that stays float32 (its scale, bias and statistics) whatever the op's format."""
    if op_type in ("batch_norm", "layer_norm", "instance_norm"):
        return slot != "X"
    if op_type == "fused_bn_add_activation":
        return slot not in ("X", "Z")
    if op_type == "resnet_unit":
        return slot not in ("X", "FilterX", "Z", "FilterZ")
    if op_type in ("fused_attention", "fused_feedforward"):
        return slot in ("LnScale", "LnBias", "Ln2Scale", "Ln2Bias", "Ln1Scale", "Ln1Bias")
    if op_type == "fused_multi_transformer":
        return slot in ("LnScale", "LnBias", "FFNLnScale", "FFNLnBias")
    return False


def keeps_float32_output(op_type: str, slot: str) -> bool:
    """An output slot that stays float32: the statistics of batch and layer norm, the fused ops' norms'."""
    if op_type in ("batch_norm", "fused_bn_add_activation", "layer_norm"):
        return slot != "Y"
    if op_type == "resnet_unit":
        return slot not in ("Y", "ConvX", "ConvZ")
    if op_type in ("fused_attention", "fused_feedforward"):
        return slot in ("LnMean", "LnVariance", "Ln2Mean", "Ln2Variance", "Ln1Mean", "Ln1Variance")
    return False


def rewrite(program: Program, level: str, low: int, lists: AmpLists) -> int:
    """Give each op of every block its format, the vars it writes their dtype, and insert the casts, block by block
    (a sub-block reuses a cast of the same name its parent makes before running it, as Paddle's); the number of
    casts. At O1, OD and O0 a control-flow op (conditional_block, while) takes no format (Paddle casts its inputs,
    which its sub-block never reads) and the values a while loop carries are float32 whichever op writes them
    (docs/optimizers.md, section 12)."""
    if level in ("O0", "O2"):   # decorate's set_param_dtype lowers the parameters at every level but O1 and OD
        _lower_parameters(program, low, lists)
    # Paddle's var.op: the last writer, blocks in order
    writers = {name: op for block in program.blocks for op in block.ops for name in op.output_names()}
    carried = _loop_carried(program) if level != "O2" else set()
    high_ops, low_ops = set(), set()
    for block in program.blocks:
        for op in list(block.ops):
            if not _takes_format(block, op) or (level != "O2" and op.type in CONTROL_FLOW):
                continue
            if _kept_float32(op, lists) or op.type in lists.black or carried.intersection(op.output_names()):
                high_ops.add(id(op))
                _set_outputs(block, op, VarType.FP32)
            elif op.type in lists.white:
                low_ops.add(id(op))
                _set_outputs(block, op, low)
            elif op.type == "cast":
                op.set_attr("in_dtype", int(block.var(op.input("X")[0]).dtype))
                block.var(op.output("Out")[0]).dtype = op.attr("out_dtype")
            else:
                fmt = low if level == "O2" else _follow(block, op, writers, high_ops, low_ops, lists, low)
                (low_ops if fmt == low else high_ops).add(id(op))
                _set_outputs(block, op, fmt)
    casts, owners = 0, {}   # sub-block -> (its block, once cast, and the index of the op that runs it)
    for block in program.blocks:
        idx, later = 0, _written_after_owner(block, owners.get(block.idx))
        while idx < len(block.ops):
            op = block.ops[idx]
            added = (_cast_inputs(block, op, idx, VarType.FP32, low, later) if id(op) in low_ops else
                     _cast_inputs(block, op, idx, low, VarType.FP32, later) if id(op) in high_ops else 0)
            casts += added
            idx += added + 1
        owners.update((sub, (block, at)) for sub, at in sub_blocks_run(block).items())
    return casts


def _loop_carried(program: Program) -> set[str]:
    """The vars a while loop's body writes that its parent block writes too (its carried values): one dtype whichever
    op writes them, float32 (Paddle's outer writer and body disagree, gradc's do not)."""
    carried, outer_writes = set(), None
    for block in program.blocks:
        loops = [op for op in block.ops if op.type == "while"]
        if not loops:
            continue
        outer_writes = outer_writes or loop_outer_writes(program)
        writers = Counter(name for op in block.ops for name in set(op.output_names()))   # ops writing each name
        for op in loops:
            own = set(op.output_names())
            carried.update(name for name in outer_writes.get(sub_block(op), ())
                           if writers[name] > (name in own))   # written by another op of the block
    return carried


def _written_after_owner(block: Block, owner: tuple[Block, int] | None) -> set[str]:
    """The vars the parent block writes after ``owner``, the op that runs ``block``: a cast there is no value for it
    (Paddle reuses it, and its loop body reads the cast its parent makes after the loop)."""
    if owner is None or owner[0] is not block.parent:
        return set()
    parent, idx = owner
    return {name for op in parent.ops[idx + 1:] for name in op.output_names()}


def _kept_float32(op: OpDesc, lists: AmpLists) -> bool:
    """Paddle's _need_keep_fp32: an op of the custom black list, or one that reads or writes a learning rate."""
    return op.type in lists.forced or any("learning_rate" in name for name in op.input_names() + op.output_names())


def _lower_parameters(program: Program, low: int, lists: AmpLists) -> None:
    """O2 and O0: every parameter in the low format but those an op kept float32 reads, and a normalisation op's
    scale and bias."""
    kept = set()
    for op in (op for block in program.blocks for op in block.ops):
        if op.type not in lists.black:
            kept.update(name for slot, args in op.inputs.items()
                        if _kept_float32(op, lists) or keeps_float32_input(op.type, slot) for name in args)
    for name, var in program.global_block.vars.items():
        if var.is_parameter and name not in kept:
            var.dtype = low


def _takes_format(block: Block, op: OpDesc) -> bool:
    """Paddle's need_process: not an op whose inputs are all non-float, nor a reader, nor one that makes a tensor of
    a float dtype its attribute names (fill_constant, uniform_random)."""
    names = [name for args in op.inputs.values() for name in args]
    if names and not any(_float_tensor(block, name) for name in names):
        return False
    if op.type == "set_value":
        return True
    if op.type in ("create_py_reader", "read"):
        return False
    return "in_dtype" in op.attrs or not any(op.attrs.get(attr) in FLOAT_DTYPES for attr in ("out_dtype", "dtype"))


def _float_tensor(block: Block, name: str) -> bool:
    var = block.find_var(name)
    return var is None or (var.type == VarType.DENSE_TENSOR and var.dtype in (VarType.FP32, VarType.FP16, VarType.BF16))


def _follow(block, op, writers, high_ops, low_ops, lists: AmpLists, low: int) -> int:
    """A gray op's format at O1: the format of the op that wrote its inputs (the last input's decides); low when no
    input was written by an op. Any other op: float32."""
    if op.type not in lists.gray:
        return VarType.FP32
    fmt = low
    for name in (name for slot in sorted(op.inputs) for name in op.inputs[slot]):   # Paddle's order: slots sorted
        writer = writers.get(name)
        if writer is op:   # in place: the writer before it
            writer = next((prev for prev in reversed(block.ops[:block.ops.index(op)])
                           if name in prev.output_names()), None)
        if writer is None:
            continue
        if id(writer) in high_ops or writer.type in lists.black:
            fmt = VarType.FP32
        elif id(writer) in low_ops or writer.type in lists.white:
            fmt = low
    return fmt


def _set_outputs(block: Block, op: OpDesc, dtype: int) -> None:
    for slot, args in op.outputs.items():
        if keeps_float32_output(op.type, slot):
            continue
        for name in args:
            var = block.find_var(name)
            if var is not None and var.type in TENSORS and var.dtype in FLOAT_DTYPES:
                var.dtype = dtype


def _cast_inputs(block: Block, op: OpDesc, idx: int, source: int, target: int, later: Container[str]) -> int:
    """Cast the op's ``source`` inputs to ``target`` in front of it (each cast once: ``x.cast_fp16`` serves every
    later reader, but not one of a parent block made after the sub-block runs: ``later``); the casts inserted."""
    inserted = 0
    for slot in sorted(op.inputs):   # Paddle's slots are a sorted map; each cast goes in front of the one before
        if source == VarType.FP32 and keeps_float32_input(op.type, slot):
            continue
        for name in list(op.inputs[slot]):
            var = block.find_var(name)
            if var is None or var.type not in TENSORS or var.dtype == target:
                continue
            cast_name = name + (".cast_fp32" if target == VarType.FP32 else ".cast_fp16")
            cast_var = block.find_var(cast_name) if cast_name in block.vars or cast_name not in later else None
            if cast_var is None or cast_var.dtype != target:
                if var.dtype != source:
                    continue
                append_cast(block, name, cast_name, target, idx, roles.FORWARD if "op_role" not in op.attrs
                             else op.attrs["op_role"])
                inserted += 1
            _rename(op, name, cast_name)
    for attr in ("in_dtype", "out_dtype", "dtype"):
        if op.attrs.get(attr) in FLOAT_DTYPES:
            op.set_attr(attr, int(target))
    return inserted


def append_cast(block: Block, name: str, out: str, dtype: int, idx: int, role: int = roles.FORWARD,
                inherit_stop_gradient: bool = True) -> str:
    """Insert at ``idx`` a cast of ``name`` to a new ``out`` (its stop_gradient ``name``'s, or unset)."""
    var = block.var(name)
    block.create_var(out, var.shape, dtype, stop_gradient=var.stop_gradient if inherit_stop_gradient else None)
    cast = complete(make_op("cast", {"X": [name]}, {"Out": [out]},
                            {"in_dtype": int(var.dtype), "out_dtype": int(dtype)}))
    roles.set_role(cast, role)
    block.ops.insert(idx, cast)
    return out


def _rename(op: OpDesc, old: str, new: str) -> None:
    for slots in (op.inputs, op.outputs):
        for slot, args in slots.items():
            slots[slot] = [new if arg == old else arg for arg in args]
