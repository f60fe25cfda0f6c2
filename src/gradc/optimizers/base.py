"""The optimizer API: what Paddle's ``opt.minimize(loss)`` appends, in the same order, with the same ops, names,
attributes and startup initialisers (docs/optimizers.md):

1. the (parameter, gradient) pairs in parameter-name order;
2. gradient clipping (``grad_clip``), 3. regularization (a ParamAttr's regularizer over ``weight_decay``);
4. the learning-rate var (startup: the rate, or a schedule's value at step 0), the accumulators of each
   parameter, one update op per parameter (or one merged op) reading a scaled rate where ParamAttr says so;
5. the optimizer's finishing ops (Adamax advances its beta pow).

    opt = Adam(learning_rate=0.01, grad_clip=ClipGradByGlobalNorm(1.0), weight_decay=L2Decay(1e-4))
    startup = opt.minimize(program, loss="mean_0.tmp_0")   # backward + updates; run startup once first
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from ..backward import append_backward
from ..errors import GradcError
from ..gcpause import gc_paused
from ..ir import Program, VarType, roles
from ..rnn_flat import flat_buffers
from ..schedule_base import remember_schedule
from ..schedules import Schedule
from .clip import GradientClip
from .emit import LR_SCHEDULE, Emitter
from .master import LOW_PRECISION, MASTER, add_master_weight, master_slots, needs_master
from .regularizer import WeightDecay, as_regularizer
from .schedule_ops import ProgramRate, ProgramSchedule


@dataclass
class ParamAttr:
    """Per-parameter settings (Paddle's ParamAttr): a learning-rate multiplier, a regularizer that wins over
    the optimizer's weight_decay, and whether gradient clipping applies."""

    learning_rate: float = 1.0
    regularizer: WeightDecay | None = None
    need_clip: bool = True


@dataclass(frozen=True)
class Tensor:
    """A hyper-parameter given as a persistable [1] float32 var (Paddle: Adam(beta1=<Tensor>)); the startup
    program fills it with ``value``."""

    value: float
    name: str


@dataclass(frozen=True)
class Accumulator:
    """A persistable var per parameter, ``<param>_<name>_<n>``, read from ``slot`` (and written back through
    its output slot unless ``read_only``), filled with ``fill`` (a number, or the optimizer attribute of that
    name) and shaped like the parameter or [1]; ``float32``: float32 for a float16/bfloat16 parameter even without a
    master weight, as Paddle's optimizer declares it."""

    name: str
    slot: str
    fill: float | str = 0.0
    scalar: bool = False
    read_only: bool = False
    float32: bool = False


def out(slot: str) -> str:
    return slot + ("_out" if slot.islower() else "Out")


def trained_parameters(block) -> list[str]:
    """Parameters whose gradient the program computes, in name order (Paddle sorts the pairs)."""
    written = {name for op in block.ops for name in op.output_names()}
    return sorted(name for name, var in block.vars.items() if var.is_parameter and name + "@GRAD" in written)


def last_gradients(block) -> list[tuple[str, str]]:
    """(parameter, gradient) of the program's last backward: ``p@GRAD``, or, where a program was differentiated
    before (a PDE residual by ``static.gradients``, a penalty), the highest ``p@GRAD@k`` written (names.py)."""
    written = {name for op in block.ops for name in op.output_names()}
    pairs = []
    for param in trained_parameters(block):
        count = 2
        while f"{param}@GRAD@{count}" in written:
            count += 1
        pairs.append((param, f"{param}@GRAD@{count - 1}" if count > 2 else param + "@GRAD"))
    return pairs


def learning_rate_pattern(block, params: list[str]) -> str:
    """Paddle's ``learning_rate_{}``, or, for an optimizer over part of the trainable parameters (a GAN's
    discriminator, its generator), one named after its first parameter: the programs of two such optimizers share
    a scope, where two ``learning_rate_0`` would be one var holding the rate of the startup run last."""
    written = {name for op in block.ops for name in op.output_names()}   # batch norm's statistics: no optimizer's
    trained = set(params) | set(flat_buffers(block))   # an RNN's flat buffer trains as its cells, in Paddle too
    left_out = any(var.is_parameter and not var.stop_gradient and name not in trained and name not in written
                   for name, var in block.vars.items())
    return f"{params[0]}_learning_rate_{{}}" if left_out else "learning_rate_{}"


class Optimizer:
    type: ClassVar[str]
    accumulators: ClassVar[tuple[Accumulator, ...]] = ()
    slots: ClassVar[tuple[str, str, str]] = ("Param", "Grad", "LearningRate")
    multi_precision = False             # set by the optimizers whose Paddle class takes it
    float32_accumulators: ClassVar[bool] = True   # a master's accumulators are float32 (Rprop's keep the dtype)
    skip_update: str | None = None      # mixed precision's overflow flag: the update ops skip the step when it is set

    def __init__(self, learning_rate: float | Schedule = 0.001, weight_decay=None,
                 grad_clip: GradientClip | None = None):
        rate = learning_rate(0) if isinstance(learning_rate, Schedule) else learning_rate
        if not isinstance(rate, (int, float, ProgramRate)) or isinstance(rate, (int, float)) and rate < 0:
            raise GradcError(f"{type(self).__name__}: learning_rate must be a number >= 0 or a schedule, "
                             f"not {learning_rate!r}")
        self.learning_rate = learning_rate
        self.regularization = as_regularizer(weight_decay)
        self.grad_clip = grad_clip

    # ---------------------------------------------------------------- what subclasses say
    def op_attrs(self, param: str, attr: ParamAttr) -> dict:
        """The update op's attributes for ``param`` (the op's defaults fill the rest)."""
        return {}

    def tensors(self) -> dict[str, Tensor]:
        """Input slot -> hyper-parameter given as a var."""
        return {}

    def folds(self, regularizer: WeightDecay) -> bool:
        """Whether the update op applies this regularizer itself (no regularization ops then)."""
        return False

    def fill(self, accumulator: Accumulator) -> float:
        value = accumulator.fill
        return float(getattr(self, value) if isinstance(value, str) else value)

    def finish(self, emit: Emitter, pairs: list[tuple[str, str]], accs: dict) -> None:
        """Ops after all updates (Adamax)."""

    # ---------------------------------------------------------------- minimize
    def minimize(self, program: Program, loss: str | None = None, parameter_list=None, no_grad_set=None,
                 param_attrs: Mapping[str, ParamAttr] | None = None) -> Program:
        """Append the backward of ``loss`` and the optimization ops; return the startup program. Only the parameters
        this backward differentiates are updated, with its gradients (a second minimize, of an actor after a critic,
        leaves the first one's parameters alone, as Paddle's does)."""
        pairs = append_backward(program, loss, parameter_list, no_grad_set)
        return self.apply(program, param_attrs, pairs)

    @gc_paused()   # as the backward: the ops and vars it adds are all new objects
    def apply(self, program: Program, param_attrs: Mapping[str, ParamAttr] | None = None,
              pairs: list[tuple[str, str]] | None = None) -> Program:
        """Append the optimization ops to a program that computes its gradients (``pairs`` of parameter and gradient,
        else every parameter's gradient of the last backward); return the startup program that initialises the
        learning rate and the accumulators."""
        emit = Emitter(program)
        pairs = sorted(pairs) if pairs is not None else last_gradients(emit.block)
        params = [p for p, _ in pairs]
        if not params:
            raise GradcError("no parameter has a gradient: append the backward first")
        # a ParamAttr of a frozen parameter is Paddle's to ignore (layer-wise rates over a model partly frozen)
        unknown = sorted(name for name in param_attrs or {}
                         if emit.block.find_var(name) is None or not emit.block.var(name).is_parameter)
        if unknown:
            raise GradcError(f"param_attrs name {', '.join(unknown)}, which the program does not train: no "
                             f"parameter of it (trained: {', '.join(params)})")
        attrs = {p: (param_attrs or {}).get(p) or ParamAttr() for p in params}
        for tensor in self.tensors().values():
            emit.persistable(tensor.name, [1], VarType.FP32, tensor.value, stop_gradient=True)
        if self.grad_clip is not None:
            pairs = self.grad_clip.append(emit, pairs, {p for p in params if attrs[p].need_clip})
        pairs = [(p, self._regularize(emit, p, g, attrs[p])) for p, g in pairs]
        rate = self.learning_rate(0) if isinstance(self.learning_rate, Schedule) else self.learning_rate
        # Paddle's learning rate takes the parameters' dtype: a float64 model's 0.01 is not rounded to float32
        wide = not isinstance(self.learning_rate, ProgramSchedule) and all(
            emit.block.var(p).dtype == VarType.FP64 for p in params)
        if isinstance(rate, ProgramRate):   # a var the program's own schedule ops write
            lr = rate.check(emit.block)
        else:
            lr = emit.persistable(emit.fresh(learning_rate_pattern(emit.block, params)), [],
                                  VarType.FP64 if wide else VarType.FP32, rate, stop_gradient=True)
        if isinstance(self.learning_rate, ProgramSchedule):   # the rate computed by ops of the program
            self.learning_rate.append(emit, lr)
        elif isinstance(self.learning_rate, Schedule) and not isinstance(rate, ProgramRate):
            remember_schedule(program, self.learning_rate)   # written by the host: a Trainer steps it
        accs = {p: self._accumulators(emit, p) for p in params}
        self.append_updates(emit, pairs, lr, attrs, accs)
        self.finish(emit, pairs, accs)
        return emit.startup

    def regularizer(self, attr: ParamAttr) -> WeightDecay | None:
        return attr.regularizer if attr.regularizer is not None else self.regularization

    def _regularize(self, emit: Emitter, param: str, grad: str, attr: ParamAttr) -> str:
        regularizer = self.regularizer(attr)
        if regularizer is None or self.folds(regularizer):
            return grad
        emit.role_var = [param, grad]
        return regularizer.append(emit, param, grad)

    def _accumulators(self, emit: Emitter, param: str) -> dict[str, str]:
        """The accumulator vars of a parameter, and (key MASTER) its master weight, whose name and, except for
        Rprop, float32 dtype its accumulators then take."""
        var = emit.block.var(param)
        owner, dtype, accs = param, var.dtype, {}
        if needs_master(self.multi_precision, var.dtype):
            owner = accs[MASTER] = add_master_weight(emit, param)
            dtype = VarType.FP32 if self.float32_accumulators else var.dtype
        for acc in self.accumulators:
            acc_dtype = VarType.FP32 if acc.float32 and dtype in LOW_PRECISION else dtype
            accs[acc.name] = emit.persistable(emit.fresh(f"{owner}_{acc.name}_{{}}"), [1] if acc.scalar else var.shape,
                                              acc_dtype, self.fill(acc))
        return accs

    @staticmethod
    def param_lr(emit: Emitter, lr: str, attr: ParamAttr) -> str:
        """The learning-rate var of a parameter: the global one, or (ParamAttr(learning_rate=r)) the global one
        scaled by r in an LR-schedule op, which the caller appends right before the update as Paddle does."""
        multiplier = attr.learning_rate
        if multiplier == 1.0:
            return lr
        scaled = emit.temporary("tmp_{}", [], emit.block.var(lr).dtype, stop_gradient=True)
        emit.scale(lr, scaled, multiplier, roles.OPTIMIZE | LR_SCHEDULE, role_var=[])
        return scaled

    def update_slots(self, param: str, grad: str, lr: str, accs: dict[str, str]) -> tuple[dict, dict]:
        """The inputs and outputs of one parameter's update op."""
        param_slot, grad_slot, lr_slot = self.slots
        inputs = {param_slot: [param], grad_slot: [grad], lr_slot: [lr]}
        outputs = {out(param_slot): [param]}
        for acc in self.accumulators:
            inputs[acc.slot] = [accs[acc.name]]
            if not acc.read_only:
                outputs[out(acc.slot)] = [accs[acc.name]]
        inputs.update({slot: [tensor.name] for slot, tensor in self.tensors().items()})
        if self.skip_update is not None:
            inputs["SkipUpdate"] = [self.skip_update]
        master_slots(inputs, outputs, [accs[MASTER]] if MASTER in accs else [], param_slot.islower())
        return inputs, outputs

    def append_updates(self, emit: Emitter, pairs, lr: str, attrs: dict[str, ParamAttr], accs: dict) -> None:
        """One update op per parameter."""
        for param, grad in pairs:
            inputs, outputs = self.update_slots(param, grad, self.param_lr(emit, lr, attrs[param]), accs[param])
            emit.op(self.type, inputs, outputs, {"multi_precision": MASTER in accs[param],
                                                 **self.op_attrs(param, attrs[param])}, role_var=[param, grad])


def check_range(owner: str, name: str, value, low: float, high: float | None = None, high_open=True) -> None:
    """Paddle's argument checks: value in [low, high) (or [low, high], or >= low)."""
    if isinstance(value, Tensor):
        value = value.value
    ok = value >= low and (high is None or (value < high if high_open else value <= high))
    if not ok:
        bound = f">= {low}" if high is None else f"in [{low}, {high}{')' if high_open else ']'}"
        raise GradcError(f"{owner}: {name} is {value}, but it must be {bound}")
