"""`gradc compile --lookahead K[,ALPHA]`: paddle.incubate.LookAhead(inner, alpha, k) as its static minimize writes it.
After the inner optimizer's update, a persistable int32 step counts the runs; each parameter keeps a slow copy
(`<param>_slow_0`), set to the parameter after the first step; every k-th step the slow copy moves alpha of the way
to the parameter, slow + alpha (param - slow), and the parameter is set to it. The conditions are 0/1 floats the
ops multiply by, as Paddle's."""

from __future__ import annotations

from ..errors import GradcError
from ..ir import Program, VarType
from .emit import Emitter


def parse_lookahead(spec: str | None) -> tuple[int, float] | None:
    """K[,ALPHA] (Paddle's k and alpha, alpha 0.5 by default): k >= 1 steps, 0 <= alpha <= 1."""
    if spec is None:
        return None
    k_text, _, alpha_text = spec.partition(",")
    try:
        k, alpha = int(k_text), float(alpha_text) if alpha_text else 0.5
    except ValueError:
        k, alpha = 0, -1.0
    if k < 1 or not 0.0 <= alpha <= 1.0:
        raise GradcError(f"--lookahead takes K[,ALPHA]: K >= 1 steps between syncs and 0 <= ALPHA <= 1 (Paddle's "
                         f"LookAhead(k=5, alpha=0.5)), not '{spec}'")
    return k, alpha


def append_lookahead(program: Program, startup: Program, params: list[str], k: int, alpha: float) -> None:
    """The LookAhead ops after the updates of ``program``, their step counter and slow copies filled by ``startup``."""
    emit = Emitter(program)
    emit.init = startup.global_block
    step = emit.persistable(emit.fresh("lookahead_step_{}"), [1], VarType.INT32, 0.0, stop_gradient=True)
    every = emit.persistable(emit.fresh("lookahead_k_{}"), [1], VarType.INT32, float(k), stop_gradient=True)
    emit.op("increment", {"X": [step]}, {"Out": [step]}, {"step": 1.0})
    one, zero = _int_constant(emit, "lookahead_ones.tmp_{}", 1), _int_constant(emit, "lookahead_zeros.tmp_{}", 0)
    phase = emit.temporary("lookahead_mod.tmp_{}", [1], VarType.INT32, stop_gradient=True)
    emit.op("elementwise_mod", {"X": [step], "Y": [every]}, {"Out": [phase]}, {"axis": -1})
    first, first_off = _flag(emit, step, one)
    sync, sync_off = _flag(emit, phase, zero)
    for param in params:
        var = program.global_block.var(param)
        slow = emit.persistable(emit.fresh(f"{param}_slow_{{}}"), var.shape, var.dtype, 0.0, stop_gradient=True)
        _blend(emit, param, first, slow, first_off, slow)            # the first step: slow = param
        target, scaled_param, scaled_slow = (emit.like(f"{param}.lookahead_{{}}", param) for _ in range(3))
        emit.scale(param, scaled_param, alpha)
        emit.scale(slow, scaled_slow, 1.0 - alpha)
        emit.op("elementwise_add", {"X": [scaled_param], "Y": [scaled_slow]}, {"Out": [target]}, {"axis": -1})
        _blend(emit, target, sync, param, sync_off, param)           # every k-th step: param = the blend
        _blend(emit, target, sync, slow, sync_off, slow)             # and slow too


def _int_constant(emit: Emitter, pattern: str, value: int) -> str:
    name = emit.temporary(pattern, [1], VarType.INT32, stop_gradient=True)
    emit.append(Emitter.fill_constant(name, [1], VarType.INT32, float(value)))
    return name


def _flag(emit: Emitter, x: str, y: str) -> tuple[str, str]:
    """float32 (x == y) and 1 - it."""
    same = emit.temporary("lookahead_equal.tmp_{}", [1], VarType.BOOL, stop_gradient=True)
    emit.op("equal", {"X": [x], "Y": [y]}, {"Out": [same]}, {"axis": -1})
    flag = emit.temporary("lookahead_cond.tmp_{}", [1], VarType.FP32, stop_gradient=True)
    emit.op("cast", {"X": [same]}, {"Out": [flag]}, {"in_dtype": int(VarType.BOOL), "out_dtype": int(VarType.FP32)})
    off = emit.temporary("lookahead_cond.tmp_{}", [1], VarType.FP32, stop_gradient=True)
    emit.op("scale", {"X": [flag]}, {"Out": [off]}, {"scale": -1.0, "bias": 1.0, "bias_after_scale": True})
    return flag, off


def _blend(emit: Emitter, chosen: str, flag: str, other: str, flag_off: str, out: str) -> None:
    """out = chosen * flag + other * (1 - flag)."""
    taken, kept = emit.like(f"{out}.lookahead_{{}}", out), emit.like(f"{out}.lookahead_{{}}", out)
    emit.op("elementwise_mul", {"X": [chosen], "Y": [flag]}, {"Out": [taken]}, {"axis": -1})
    emit.op("elementwise_mul", {"X": [other], "Y": [flag_off]}, {"Out": [kept]}, {"axis": -1})
    emit.op("elementwise_add", {"X": [taken], "Y": [kept]}, {"Out": [out]}, {"axis": -1})
