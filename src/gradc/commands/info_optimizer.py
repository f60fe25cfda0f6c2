"""gradc info's optimizer line: a training program's update ops, its weight decay and what it leaves undecayed, a
global-norm clip, and each learning rate (a constant, a schedule's, or a parameter's multiple of one)."""

from __future__ import annotations

from collections import Counter

from ..pairing import OPTIMIZER

LISTED = 12   # names listed; the rest counted


def optimizer_facts(ops: list, kinds: list[str], written: set[str]) -> dict | None:
    """A training program's update ops by type, the parameters an AdamW leaves undecayed (Paddle's
    apply_decay_param_fun writes with_decay False), a global-norm clip's norm, and whether ops write the rate."""
    updates = [op for op, kind in zip(ops, kinds) if kind == OPTIMIZER and op.inputs.get("Param")]
    if not updates:
        return None
    constants = {op.output("Out")[0]: op.attrs.get("value") for op in ops if op.type == "fill_constant"}
    # ClipGradByGlobalNorm: max(clip_norm, sqrt(sum of squared_l2_norm)), the norm a fill_constant (X or, in PIR, Y)
    clips = [constants[name] for op, kind in zip(ops, kinds) if kind == OPTIMIZER and op.type == "elementwise_max"
             for name in op.input_names() if name in constants] if any(
        op.type == "squared_l2_norm" for op in ops) else []
    multipliers, rates = _rate_multipliers(ops, updates)
    return {"updates": dict(Counter(op.type for op in updates)),
            "decay_off": sorted(op.input("Param")[0] for op in updates if op.attrs.get("with_decay") is False),
            "decay": sorted({round(op.attrs["coeff"], 7) for op in updates if op.attrs.get("with_decay")}),
            "clip_global_norm": round(clips[0], 7) if clips else None,
            "learning_rates": rates, "rates_written": [name for name in rates if name in written],
            "rate_multipliers": multipliers}


def without_updates(kinds: Counter, kind_of, has_loss: bool) -> str:
    """The kind of a program without update ops, whose optimizer-role ops (if any) are a learning-rate schedule
    (op_role LRSched: paddle.optimizer.lr's exponential_decay, noam_decay, ..., fluid.layers' in Paddle 1.x/2.x): a
    forward program with those ops, not a training program."""
    schedule = kinds.pop(OPTIMIZER, 0)
    described = kind_of(kinds, has_loss)
    return described + (f"; {schedule} ops compute a learning-rate schedule (op_role LRSched), which no optimizer op "
                        f"reads" if schedule else "")


def _rate_multipliers(ops: list, updates: list) -> tuple[dict[str, list[str]], list[str]]:
    """'RATE x FACTOR' -> the parameters updated at that rate, where a scale op (Paddle's ParamAttr(learning_rate=
    FACTOR), layer-wise decay) multiplies the rate for them, and the rates read, the multiplied ones as their base."""
    readers = Counter(name for op in ops for name in op.input_names())
    scaled = {op.output("Out")[0]: (op.input("X")[0], op.attrs.get("scale", 1.0)) for op in ops
              if op.type == "scale" and not op.attrs.get("bias") and op.inputs.get("X")}
    multipliers, rates = {}, set()
    for op in updates:
        for rate in op.inputs.get("LearningRate", []):
            base, factor = scaled.get(rate, (rate, None))
            if factor is None or readers[rate] > 1:   # a rate of its own, not one parameter's multiple of another
                rates.add(rate)
                continue
            rates.add(base)
            multipliers.setdefault(f"{base} x {factor:g}", []).append(op.input("Param")[0])
    return {key: sorted(params) for key, params in multipliers.items()}, sorted(rates)


def optimizer_line(optimizer: dict) -> str:
    """'optimizer: adamw 45; weight decay 0.1, off for 30 (...); gradients clipped to a global norm of 1; learning
    rate learning_rate_0, ...'."""
    parts = [", ".join(f"{kind} {count}" for kind, count in optimizer["updates"].items())]
    off = optimizer["decay_off"]
    if optimizer["decay"] or off:
        named = ", ".join(off[:LISTED // 2]) + (f", ... ({len(off)} in all)" if len(off) > LISTED // 2 else "")
        parts.append(f"weight decay {', '.join(map(str, optimizer['decay'])) or 'none'}"
                     + (f", off for {len(off)} ({named})" if off else ""))
    if optimizer["clip_global_norm"] is not None:
        parts.append(f"gradients clipped to a global norm of {optimizer['clip_global_norm']:g}")
    for rate in optimizer["learning_rates"]:
        parts.append(f"learning rate {rate}, " + ("a schedule's: ops of the program write it"
                                                  if rate in optimizer["rates_written"] else
                                                  f"no op writes it: {optimizer['schedule']}, recorded, which the host "
                                                  f"steps (gradc train follows it)" if optimizer.get("schedule") else
                                                  "no op writes it: a constant, or a scheduler's that the host sets "
                                                  "(gradc train --lr-schedule)"))
    for rate, params in optimizer["rate_multipliers"].items():   # ParamAttr(learning_rate=...) of these
        parts.append(f"rate {rate} (ParamAttr learning_rate) for {len(params)} ({', '.join(params[:LISTED // 2])}"
                     + (", ...)" if len(params) > LISTED // 2 else ")"))
    return "optimizer: " + "; ".join(parts)
