"""A readable listing of a program: blocks, vars (shape, dtype, flags), ops (slots, attrs)."""

from __future__ import annotations

from .ir import AttrType, Program, VarDesc, VarType, dtype_name

HIDDEN_ATTRS = {"op_callstack"}  # long Python tracebacks Paddle records on every op
# where Paddle built the op and its backend switches: the same on almost every op, noise in a listing or a diff
BOOKKEEPING = ("op_callstack", "op_namescope", "op_device", "with_quant_attr", "use_mkldnn", "use_onednn",
               "mkldnn_data_type", "onednn_data_type", "use_quantizer")


def describe_var(var: VarDesc) -> str:
    kind = VarType(var.type).name if var.type in VarType._value2member_map_ else f"type{var.type}"
    text = f"{var.name} : {kind}"
    if var.dtype is not None:
        text += f" {dtype_name(var.dtype)}{var.shape}"
    flags = [f for f in ("persistable", "is_parameter", "stop_gradient", "need_check_feed") if getattr(var, f)]
    return text + (f"  [{', '.join(flags)}]" if flags else "")


def attr_text(value, kind: int) -> str:
    if kind == AttrType.BLOCK:
        return f"block {value}"
    if isinstance(value, bytes) or (isinstance(value, list) and value and isinstance(value[0], bytes)):
        return "<scalar>"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, str):
        return repr(value)
    return str(value)


def program_listing(program: Program, attrs: bool = True, bookkeeping: bool = False) -> str:
    """``bookkeeping``: list Paddle's BOOKKEEPING attributes too (op_callstack never)."""
    hidden = HIDDEN_ATTRS if bookkeeping else HIDDEN_ATTRS | set(BOOKKEEPING)
    lines = [f"program: {len(program.blocks)} block(s), {program.num_ops()} op(s)"]
    for block in program.blocks:
        forward = f", forward block {block.forward_block_idx}" if block.forward_block_idx not in (None, -1) else ""
        lines.append(f"\nblock {block.idx} (parent {block.parent_idx}{forward}): "
                     f"{len(block.vars)} vars, {len(block.ops)} ops")
        lines.append("  vars:")
        lines.extend(f"    {describe_var(var)}" for var in sorted(block.vars.values(), key=lambda v: v.name))
        lines.append("  ops:")
        for idx, op in enumerate(block.ops):
            ins = ", ".join(f"{slot}={args}" for slot, args in op.inputs.items() if args)
            outs = ", ".join(f"{slot}={args}" for slot, args in op.outputs.items() if args)
            lines.append(f"    [{idx}] {op.type}({ins}) -> {outs}")
            if attrs:
                shown = [f"{k}={attr_text(v, op.attr_types[k])}" for k, v in op.attrs.items()
                         if k not in hidden]
                if shown:
                    lines.append(f"         {', '.join(shown)}")
    return "\n".join(lines)
