"""Master weights (``multi_precision=True``): a float16/bfloat16 parameter gets a persistable float32 copy,
``<param>_fp32_master_<n>``, that the startup program fills and then casts from the parameter; the update op
reads and writes it as MasterParam/MasterParamOut, keeps its accumulators (named after the master) in float32,
and writes the parameter as the master's cast, as Paddle's minimize does (docs/optimizers.md, section 2)."""

from __future__ import annotations

from ..errors import GradcError
from ..ir import VarType, roles
from ..registry import make_op
from .emit import Emitter

LOW_PRECISION = frozenset({VarType.FP16, VarType.BF16})
MASTER = "@master"   # the key of the master weight among a parameter's accumulators


def multi_precision_flag(owner: str, value) -> bool:
    """The multi_precision argument, which must be a bool (``--opt multi_precision=yes`` is a mistake, not True)."""
    if not isinstance(value, bool):
        raise GradcError(f"{owner}: multi_precision must be True or False, not {value!r}")
    return value


def needs_master(multi_precision: bool, dtype: int) -> bool:
    return multi_precision and dtype in LOW_PRECISION


def add_master_weight(emit: Emitter, param: str) -> str:
    """The master var: in both programs, startup ``fill_constant`` (0) then ``cast`` of the parameter."""
    var = emit.block.var(param)
    master = emit.persistable(emit.fresh(f"{param}_fp32_master_{{}}"), var.shape, VarType.FP32, 0.0,
                              stop_gradient=True)
    if emit.init.find_var(param) is None:
        emit.init.add_var(var.copy())
    cast = make_op("cast", {"X": [param]}, {"Out": [master]}, {"in_dtype": int(var.dtype),
                                                                  "out_dtype": int(VarType.FP32)})
    roles.set_role(cast, roles.FORWARD)
    emit.init.ops.append(cast)
    return master


def master_slots(inputs: dict, outputs: dict, masters: list[str], lower_case: bool) -> None:
    """Add MasterParam/MasterParamOut (master_param/master_param_out for the lower-case ops) when there are any."""
    if masters:
        slot = "master_param" if lower_case else "MasterParam"
        inputs[slot] = list(masters)
        outputs[slot + ("_out" if lower_case else "Out")] = list(masters)


def precision_groups(pairs: list[tuple[str, str]], dtype_of) -> list[list[tuple[str, str]]]:
    """The (param, grad) pairs of the merged ops: Paddle writes one op for the float32 parameters, then one
    for the float16/bfloat16 ones (the only op that can carry master weights); empty groups write none."""
    groups = ([pair for pair in pairs if dtype_of(pair[0]) not in LOW_PRECISION],
              [pair for pair in pairs if dtype_of(pair[0]) in LOW_PRECISION])
    return [group for group in groups if group]
