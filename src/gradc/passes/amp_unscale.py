"""What mixed precision writes after the backward (passes/amp.py): the casts of float32 parameters' low-precision
gradients moved behind it, decorate's master gradients (master_grad), check_finite_and_unscale and
update_loss_scaling."""

from __future__ import annotations

from ..amp_casts import append_cast
from ..ir import AttrType, Block, VarType, roles
from ..optimizers.emit import Emitter


def move_gradient_casts(block: Block, pairs: list[tuple[str, str]]) -> None:
    """Paddle's update_role_var_grad: the cast of a float32 parameter's low-precision gradient moves to the end (an
    optimize op), and the op that wrote the low gradient carries the parameter's op_role_var."""
    last = {name: op for op in block.ops for name in op.output_names()}   # each var's last writer
    moved = []
    for param, grad in pairs:
        writer = last.get(grad)
        if writer is None or writer.type != "cast" or block.var(grad).dtype != VarType.FP32:
            continue
        low_grad = writer.input("X")[0]
        producer = last[low_grad]
        role_var = [name for name in producer.attrs.get("op_role_var", []) if name not in (param, low_grad)]
        producer.set_attr("op_role_var", [param, low_grad, *role_var], AttrType.STRINGS)
        writer.attrs.pop("op_role_var", None)
        writer.attr_types.pop("op_role_var", None)
        writer.set_attr("op_role", roles.OPTIMIZE, AttrType.INT)
        moved.append(writer)
    gone = set(map(id, moved))   # one rebuild, the casts at the end in the pairs' order
    block.ops[:] = [op for op in block.ops if id(op) not in gone] + moved


def unscale(emit: Emitter, pairs: list[tuple[str, str]], scaling: dict[str, str], by_dtype: bool,
            updating: dict | None) -> str:
    """check_finite_and_unscale (one for all gradients; ``by_dtype``, O2's: one for the float32 ones, one for the low
    ones, their flags joined by concat and reduce_any) and, given ``updating`` (its attributes: scaling dynamically),
    update_loss_scaling; the flag's var."""
    block, scale = emit.block, scaling["loss_scaling"]
    grads = [grad for _, grad in pairs]
    if not by_dtype:
        groups = [("find_infinite_scale", grads)]
    else:
        groups = [(name, group) for name, group in
                  (("find_infinite_scale_fp32", [g for g in grads if block.var(g).dtype == VarType.FP32]),
                   ("find_infinite_scale_fp16", [g for g in grads if block.var(g).dtype != VarType.FP32])) if group]
    flags = []
    for name, group in groups:
        flags.append(emit.temporary(name + ".tmp_{}", [1], VarType.BOOL))
        emit.op("check_finite_and_unscale", {"X": group, "Scale": [scale]},
                {"Out": group, "FoundInfinite": [flags[-1]]}, role_var=group)
    found = flags[0]
    if len(flags) > 1:
        joined = emit.temporary("concat_{}.tmp_0", [len(flags)], VarType.BOOL)
        emit.op("concat", {"X": flags}, {"Out": [joined]}, {"axis": 0}, role_var=[])
        found = emit.temporary("reduce_any_{}.tmp_0", [], VarType.BOOL)
        emit.op("reduce_any", {"X": [joined]}, {"Out": [found]}, {"dim": [0], "reduce_all": True}, role_var=[])
    if updating is not None:
        for stop, (_, group) in enumerate(groups):
            emit.op("update_loss_scaling",
                    {"X": group, "FoundInfinite": [found], "PrevLossScaling": [scale],
                     "InGoodSteps": [scaling["num_good_steps"]], "InBadSteps": [scaling["num_bad_steps"]]},
                    {"Out": group, "LossScaling": [scale], "OutGoodSteps": [scaling["num_good_steps"]],
                     "OutBadSteps": [scaling["num_bad_steps"]]},
                    {**updating, "stop_update": stop > 0}, role_var=[])
    return found


def master_gradients(block: Block, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """decorate's master_grad at O2: each low-precision gradient cast to a float32 ``<grad>_fp32_master_0``, which the
    unscaling and the optimizer take instead (the casts carry the forward role: Paddle appends them outside its
    optimizer's guard)."""
    masters = []
    for param, grad in pairs:
        var = block.var(grad)
        if var.dtype == VarType.FP32:
            masters.append((param, grad))
            continue
        master = append_cast(block, grad, grad + "_fp32_master_0", VarType.FP32, len(block.ops),
                             inherit_stop_gradient=False)   # Paddle's master var leaves it unset
        masters.append((param, master))
    return masters
