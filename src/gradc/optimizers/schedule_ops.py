"""A learning-rate schedule written as ops at the start of the training program, as Paddle 1.x's
fluid.layers.*_decay wrote them: an increment op advances a persistable step counter (the startup program sets
it to -1, so run k reads k) and a few ops compute the rate into the learning-rate var the optimizer reads. Paddle
runs such a program as it is, gradc train needs no --lr-schedule, and a checkpoint holds the counter.

    Adam(learning_rate=ProgramSchedule("cosine", 0.01, decay_steps=1000, warmup_steps=100)).minimize(program)

cosine: base (1 + cos(pi s / decay_steps)) / 2 (Paddle's CosineAnnealingDecay with eta_min 0); linear: base
(1 - min(s, decay_steps) / decay_steps) (PolynomialDecay with power 1, end_lr 0); step: base
gamma^floor(s / decay_steps) (StepDecay); constant: base. With warmup_steps W: base k / W for k < W (LinearWarmup
from 0), then the schedule of s = k - W. All ops carry op_role LRSched, so evaluation and export drop them.
"""

from __future__ import annotations

import math

from ..errors import GradcError
from ..ir import VarType, dtype_name
from ..schedules import Schedule
from .emit import LR_SCHEDULE, Emitter

COUNTER = "@LR_DECAY_COUNTER@"
KINDS = ("cosine", "linear", "step", "constant")


SPANS = {"cosine": "the steps from the full rate to 0", "linear": "the steps from the full rate to 0",
         "step": "the steps between two decays"}


class ProgramSchedule(Schedule):
    def __init__(self, kind: str, learning_rate: float, decay_steps: int | None = None, gamma: float = 0.1,
                 warmup_steps: int = 0):
        if kind not in KINDS:
            raise GradcError(f"unknown in-program schedule '{kind}' (known: {', '.join(KINDS)})")
        if kind != "constant" and (not isinstance(decay_steps, int) or decay_steps < 1):
            given = "none given" if decay_steps is None else f"not {decay_steps!r}"
            raise GradcError(f"the {kind} schedule needs decay steps >= 1 (--decay-steps N, decay_steps= in Python; "
                             f"{given}): {SPANS[kind]}")
        if warmup_steps < 0 or learning_rate < 0:
            raise GradcError("warm-up steps and the learning rate must be >= 0")
        self.kind, self.base, self.decay_steps = kind, float(learning_rate), decay_steps
        self.gamma, self.warmup_steps = float(gamma), int(warmup_steps)

    def __call__(self, step: int) -> float:
        """The rate of run ``step`` (0-based), in closed form (the ops compute it in float32)."""
        if step < self.warmup_steps:
            return self.base * step / self.warmup_steps
        s = step - self.warmup_steps
        if self.kind == "cosine":
            return self.base * (1 + math.cos(math.pi * s / self.decay_steps)) / 2
        if self.kind == "linear":
            return self.base * (1 - min(s, self.decay_steps) / self.decay_steps)
        if self.kind == "step":
            return self.base * self.gamma ** (s // self.decay_steps)
        return self.base

    def append(self, emit: Emitter, lr: str) -> None:
        """The schedule's ops, before every other op of block 0, writing ``lr``."""
        ops = _Ops(emit)
        counter = emit.persistable(COUNTER, [], VarType.INT64, -1.0, stop_gradient=True)
        ops.add("increment", {"X": [counter]}, {"Out": [counter]}, {"step": 1.0})
        k = ops.cast(counter)
        s = ops.scale(k, 1.0, -float(self.warmup_steps)) if self.warmup_steps else k
        if self.kind == "cosine":
            angle = ops.scale(s, math.pi / self.decay_steps)
            decayed = ops.scale(ops.out("cos", {"X": [angle]}), self.base / 2, self.base / 2)
        elif self.kind == "linear":
            done = ops.out("elementwise_min", {"X": [s], "Y": [ops.constant(float(self.decay_steps))]})
            decayed = ops.scale(done, -self.base / self.decay_steps, self.base)
        elif self.kind == "step":
            stage = ops.cast(ops.out("elementwise_floordiv", {"X": [counter if not self.warmup_steps else
                                                                    ops.round_down(s)],
                                                              "Y": [ops.constant(self.decay_steps, VarType.INT64)]},
                                     VarType.INT64))
            decayed = ops.scale(ops.out("elementwise_pow", {"X": [ops.constant(self.gamma)], "Y": [stage]}), self.base)
        else:
            decayed = ops.constant(self.base)
        if self.warmup_steps:
            warm = ops.scale(k, self.base / self.warmup_steps)
            early = ops.out("less_than", {"X": [k], "Y": [ops.constant(float(self.warmup_steps))]}, VarType.BOOL)
            decayed = ops.out("where", {"Condition": [early], "X": [warm], "Y": [decayed]})
        ops.add("scale", {"X": [decayed]}, {"Out": [lr]}, {"scale": 1.0, "bias": 0.0, "bias_after_scale": True})
        ops.place_first()


class ProgramRate:
    """The learning rate a var of the program holds, computed by ops of its own (paddle.optimizer.lr's
    exponential_decay, noam_decay, ...: fluid.layers' in Paddle 1.x/2.x), as Paddle 2's optimizer(learning_rate=
    <Variable>) reads it: the update ops read that var, and no learning_rate_0 is made."""

    def __init__(self, var: str):
        self.var = var

    def check(self, block) -> str:
        """The var, which must be a float var of one element in block 0."""
        found = block.find_var(self.var)
        if found is None:
            raise GradcError(f"--lr-var {self.var}: block 0 declares no such var")
        if found.dtype not in (VarType.FP32, VarType.FP64) or math.prod(max(d, 1) for d in found.shape or []) != 1:
            raise GradcError(f"--lr-var {self.var}: a learning rate is a float32 or float64 var of one element, not "
                             f"{dtype_name(found.dtype)}{found.shape}")
        return self.var

    def __repr__(self) -> str:
        return f"ProgramRate({self.var!r})"


def unread_rates(program) -> list[str]:
    """Float vars of one element that ops with op_role LRSched write in block 0 and no op reads: a schedule the
    program computes (paddle.optimizer.lr.exponential_decay, ...) that no update reads."""
    block = program.global_block
    read = {name for each in program.blocks for op in each.ops for name in op.input_names()}
    written = [name for op in block.ops if int(op.attrs.get("op_role", 0)) & LR_SCHEDULE for name in op.output_names()]
    return [name for name in dict.fromkeys(written) if name not in read and (var := block.find_var(name)) is not None
            and var.dtype in (VarType.FP32, VarType.FP64) and math.prod(max(d, 1) for d in var.shape or []) == 1]


class _Ops:
    """Scalar ([]) temporaries and ops of the schedule, collected and then moved to the start of block 0."""

    def __init__(self, emit: Emitter):
        self.emit, self.start = emit, len(emit.block.ops)

    def add(self, type: str, inputs: dict, outputs: dict, attrs: dict | None = None) -> None:
        self.emit.op(type, inputs, outputs, attrs, role=LR_SCHEDULE, role_var=[])

    def out(self, type: str, inputs: dict, dtype: int = VarType.FP32, attrs: dict | None = None) -> str:
        name = self.emit.temporary("learning_rate_schedule.tmp_{}", [], dtype, stop_gradient=True)
        self.add(type, inputs, {"Out": [name]}, attrs)
        return name

    def scale(self, x: str, scale: float, bias: float = 0.0) -> str:
        return self.out("scale", {"X": [x]}, attrs={"scale": float(scale), "bias": float(bias),
                                                     "bias_after_scale": True})

    def cast(self, x: str) -> str:
        source = self.emit.block.var(x).dtype
        return self.out("cast", {"X": [x]}, attrs={"in_dtype": int(source), "out_dtype": int(VarType.FP32)})

    def round_down(self, x: str) -> str:
        """A float step count >= 0 as int64 (exact below 2^24)."""
        return self.out("cast", {"X": [x]}, VarType.INT64, {"in_dtype": int(VarType.FP32),
                                                             "out_dtype": int(VarType.INT64)})

    def constant(self, value: float, dtype: int = VarType.FP32) -> str:
        name = self.emit.temporary("learning_rate_schedule.tmp_{}", [], dtype, stop_gradient=True)
        self.emit.append(self.emit.fill_constant(name, [], dtype, float(value)), LR_SCHEDULE, [])
        return name

    def place_first(self) -> None:
        block = self.emit.block
        block.ops[:] = block.ops[self.start:] + block.ops[:self.start]
        self.emit.program.mark_changed()
