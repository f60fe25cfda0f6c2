"""The mixed-precision pass: what ``paddle.static.amp.decorate(optimizer, level, dtype, ...).minimize(loss)`` writes
on a CUDA build of Paddle 3.3.1, from a float32 forward program (docs/optimizers.md, section 12).

O1 computes the white-list ops (matmul_v2, conv2d, ...) in float16 or bfloat16 and the black-list ops (softmax,
losses, reductions) in float32; a gray op (add, relu, pool, ...) follows the op that wrote its inputs; casts go in
front of each op whose inputs are in the other format. OD computes only the white-list ops in the low format. O2
declares the parameters and computes every op but a few (embeddings, interpolations) in the low format; batch and
layer norm keep float32 scale, bias and statistics; the optimizer keeps float32 master weights. The loss (cast to
float32) is multiplied by ``loss_scaling_0``; after the backward, check_finite_and_unscale divides the gradients by it
and flags an inf or a NaN, update_loss_scaling zeroes such a step's gradients and halves the scale (doubles it after
``incr_every_n_steps`` finite steps), and Adam and AdamW skip the step (SkipUpdate). bfloat16 has no dynamic loss
scaling, as in Paddle."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..amp_casts import AmpLists, amp_lists, append_cast, keeps_float32_input, rewrite
from ..backward import default_loss
from ..errors import GradcError, GradcWarning, closest
from ..ir import Block, Program, VarType, dtype_name, roles
from ..optimizers import Optimizer, ParamAttr, make_optimizer
from ..optimizers.emit import Emitter, complete
from ..optimizers.gradient_merge import GradientMergeOptimizer, merge_gradients
from ..registry import OPS, make_op
from ..schedules import Schedule
from .amp_unscale import master_gradients, move_gradient_casts, unscale
from .backward import BackwardPass
from .base import Pass, register_pass

LOW = {"float16": VarType.FP16, "bfloat16": VarType.BF16}
SKIPPING = ("adam", "adamw")   # the optimizers decorate hands the overflow flag (their SkipUpdate input)


@dataclass(frozen=True)
class AmpOptions:
    """paddle.static.amp.decorate's arguments, with its defaults; ``use_dynamic_loss_scaling`` None: on for float16,
    off for bfloat16 (which never scales dynamically: Paddle turns it off and the scale to 1). ``master_grad``: at
    O2, the optimizer takes float32 copies of the low-precision gradients (decorate ignores it at other levels)."""

    level: str = "O1"
    dtype: str = "float16"
    init_loss_scaling: float = 2.0**16
    incr_every_n_steps: int = 2000
    decr_every_n_nan_or_inf: int = 1
    incr_ratio: float = 2.0
    decr_ratio: float = 0.5
    use_dynamic_loss_scaling: bool | None = None
    custom_white_list: tuple[str, ...] = ()
    custom_black_list: tuple[str, ...] = ()
    master_grad: bool = False

    def __post_init__(self):
        checks = [("level", self.level in ("O0", "O1", "O2", "OD"), "O0, O1, O2 or OD"),
                  ("dtype", self.dtype in LOW, "float16 or bfloat16"),
                  ("init_loss_scaling", _number(self.init_loss_scaling) and 0 < self.init_loss_scaling < math.inf,
                   "a number > 0"),
                  ("incr_every_n_steps", _count(self.incr_every_n_steps), "an integer >= 1"),
                  ("decr_every_n_nan_or_inf", _count(self.decr_every_n_nan_or_inf), "an integer >= 1"),
                  ("incr_ratio", _number(self.incr_ratio) and 1 < self.incr_ratio < math.inf, "a number > 1"),
                  ("decr_ratio", _number(self.decr_ratio) and 0 < self.decr_ratio < 1, "a number in (0, 1)"),
                  ("use_dynamic_loss_scaling", self.use_dynamic_loss_scaling in (None, True, False), "True or False"),
                  ("master_grad", self.master_grad in (True, False), "True or False")]
        for name, ok, wanted in checks:
            if not ok:
                raise GradcError(f"amp: {name} must be {wanted}, not {getattr(self, name)!r}")
        for name in ("custom_white_list", "custom_black_list"):
            unknown = [op_type for op_type in getattr(self, name) if not OPS.knows(op_type)]
            if unknown:
                OPS.load_all()   # only for the suggestion
                maybe = closest(unknown[0], list(OPS))
                raise GradcError(f"amp: {name} names {unknown[0]!r}, which is no op type"
                                 + (f" (did you mean {maybe!r}?)" if maybe else ""))
        both = sorted(set(self.custom_white_list) & set(self.custom_black_list))
        if both:
            raise GradcError(f"amp: custom_white_list and custom_black_list both name {both[0]!r}")

    def lists(self) -> AmpLists:
        return amp_lists(self.level, self.dtype, self.custom_white_list, self.custom_black_list)

    @property
    def dynamic_asked(self) -> bool:
        return self.dtype == "float16" if self.use_dynamic_loss_scaling is None else self.use_dynamic_loss_scaling

    @property
    def dynamic(self) -> bool:
        return self.dtype == "float16" and self.dynamic_asked

    @property
    def scaled(self) -> bool:
        """Whether the loss is multiplied by a scale: dynamically, or by a static scale other than 1 (asked to scale
        bfloat16 dynamically, Paddle sets its scale to 1 instead)."""
        return self.dynamic or (not self.dynamic_asked and self.init_loss_scaling != 1.0)

    @property
    def update_attrs(self) -> dict | None:
        """update_loss_scaling's attributes when scaling dynamically, else None."""
        return {"incr_every_n_steps": self.incr_every_n_steps, "decr_every_n_nan_or_inf": self.decr_every_n_nan_or_inf,
                "incr_ratio": self.incr_ratio, "decr_ratio": self.decr_ratio} if self.dynamic else None

    @property
    def master_grads(self) -> bool:
        """master_grad where decorate honours it: at O2."""
        return self.master_grad and self.level == "O2"


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


@register_pass
class AmpPass(Pass):
    """Forward casts, the scaled loss, its backward, the unscaling and the optimizer's updates, in one pass (each step
    needs the one before: the backward differentiates the scaled loss, the optimizer skips on its flag). The result
    is the startup program: the optimizer's, with the loss-scaling vars first. ``memory``: passes that rewrite the
    backward (recomputation, eager accumulation), run right after it, before the unscaling reads the gradients.
    A GradientMergeOptimizer: as Paddle's over a decorated optimizer, the scaled gradients are summed each run and the
    unscaling, its check, the scale's update and the updates run every k runs, on their mean."""
    name = "amp"

    def __init__(self, options: AmpOptions | None = None, backward: BackwardPass | None = None,
                 optimizer: Optimizer | GradientMergeOptimizer | None = None,
                 param_attrs: Mapping[str, ParamAttr] | None = None, memory: Sequence[Pass] = ()):
        self.options = options or AmpOptions()
        self.memory = list(memory)
        self.memory_results: dict[str, object] = {}   # each memory pass's result by name, once applied
        self.backward = backward or BackwardPass()
        merged = isinstance(optimizer, GradientMergeOptimizer)
        self.k_steps = optimizer.k_steps if merged else None
        self.optimizer = optimizer.inner_optimizer if merged else optimizer or make_optimizer("sgd")
        self.param_attrs = param_attrs
        self.loss: str | None = None   # the loss before scaling, once applied
        self.casts = 0                 # the casts the forward got

    def summary(self) -> str:
        options = self.options
        scaling = (f"scaled dynamically from {options.init_loss_scaling:g}" if options.dynamic else
                   f"scaled by {options.init_loss_scaling:g}" if options.scaled else "not scaled")
        casts = f"{self.casts} cast{'s' * (self.casts != 1)}"
        return f"amp: {options.level} {options.dtype}, {casts}, the loss {self.loss} {scaling}"

    def requires(self, program: Program) -> None:
        if any(roles.has_role(op, roles.BACKWARD) for op in program.global_block.ops):
            raise self.fail("the program already has backward ops: give the forward program (the pass appends the "
                            "backward of the scaled loss itself)")
        if len(self.backward.losses) > 1:
            raise self.fail("one loss only: decorate scales a single loss")

    def apply(self, program: Program) -> Program:
        block, options = program.global_block, self.options
        self.loss = self.backward.losses[0] if self.backward.losses else default_loss(program)
        if self.loss is None:
            raise self.fail("no loss: name it (--loss)")
        if options.dtype == "bfloat16" and options.use_dynamic_loss_scaling:
            warnings.warn("bfloat16 has no dynamic loss scaling: as in Paddle, the loss is not scaled (scale 1) and no "
                          "loss-scaling op is written", GradcWarning, stacklevel=2)
        if options.level == "OD" and (options.custom_white_list or options.custom_black_list):
            warnings.warn("level OD uses no custom white or black list (decorate ignores them there)", GradcWarning,
                          stacklevel=2)
        if options.master_grad and options.level != "O2":
            warnings.warn(f"master_grad is for level O2 only: at {options.level} decorate ignores it, as gradc does",
                          GradcWarning, stacklevel=2)
        self.casts = rewrite(program, options.level, LOW[options.dtype], options.lists())
        scaling = _scaling_vars(block, options) if options.scaled else {}
        self.backward.losses = [_scaled_loss(program, self.loss, scaling)]
        pairs = self.backward(program)
        self.backward.losses, self.backward.losses_used = [self.loss], [self.loss]
        self.memory_results = {memory.name: memory(program) for memory in self.memory}
        move_gradient_casts(block, pairs)
        if options.master_grads:
            pairs = master_gradients(block, pairs)
        emit = Emitter(program)
        found = unscale(emit, pairs, scaling, options.level == "O2", options.update_attrs) if scaling else None
        self.optimizer.multi_precision = True   # decorate's master_weight=None: float32 masters of low parameters
        if found is not None and self.optimizer.type in SKIPPING:
            skip = emit.temporary("memcpy_{}.tmp_0", block.var(found).shape, VarType.BOOL)
            emit.op("memcpy", {"X": [found]}, {"Out": [skip]}, {"dst_place_type": 0}, role_var=[])
            self.optimizer.skip_update = skip
        try:
            startup = self.optimizer.apply(program, self.param_attrs, pairs)
        finally:   # the flag is this program's var: the optimizer may minimize another program after
            self.optimizer.skip_update = None
        if not isinstance(self.optimizer.learning_rate, Schedule):
            _rate_of_shape_one(program, startup)
        _round_parameters(program, startup)
        for position, (name, var) in enumerate(scaling.items()):   # first, as decorate creates them first
            dtype, value = _initial(options)[name]
            fill = emit.fill_constant(var, [1], dtype, value)
            roles.set_role(fill, roles.FORWARD)
            startup.global_block.create_var(var, [1], dtype, persistable=True, stop_gradient=True)
            startup.global_block.ops.insert(position, fill)
        if self.k_steps:
            merge_gradients(program, startup, self.backward.pairs, self.k_steps)
        return startup

    def ensures(self, program: Program) -> None:
        """No op of the white list reads a float32 tensor, none of the black list a low-precision one."""
        low, lists = LOW[self.options.dtype], self.options.lists()
        for block, idx, op in ((each, idx, op) for each in program.blocks for idx, op in enumerate(each.ops)):
            if roles.has_role(op, roles.BACKWARD) or roles.has_role(op, roles.OPTIMIZE):
                continue
            if op.type == "cast" or any("learning_rate" in name for name in op.input_names()):   # as in Paddle
                continue
            wrong = (VarType.FP32 if op.type in lists.white else
                     low if op.type in lists.black or op.type in lists.forced else None)
            if wrong is None:   # a gray op: either format
                continue
            for slot, args in op.inputs.items():
                for name in args:
                    var = block.find_var(name)
                    if var is not None and var.dtype == wrong and not (
                            wrong == VarType.FP32 and keeps_float32_input(op.type, slot)):
                        listed = "white" if wrong == VarType.FP32 else "black"
                        raise self.fail(f"block {block.idx}, op {idx} ({op.type}, on the {listed} list) reads {name} "
                                        f"as {dtype_name(wrong)}")


def _scaled_loss(program: Program, loss: str, scaling: dict[str, str]) -> str:
    """The loss the backward starts from: ``loss`` (cast to float32 where it is not: O2's) times loss_scaling_0."""
    block = program.global_block
    if block.var(loss).dtype != VarType.FP32:
        loss = append_cast(block, loss, program.unused_name("tmp_{}"), VarType.FP32, len(block.ops))
    if not scaling:
        return loss
    scaled = block.create_var(program.unused_name("tmp_{}"), block.var(loss).shape or [1], VarType.FP32).name
    mul = complete(make_op("elementwise_mul", {"X": [loss], "Y": [scaling["loss_scaling"]]}, {"Out": [scaled]},
                           {"axis": -1, "Scale_x": 1.0, "Scale_y": 1.0, "Scale_out": 1.0}))
    roles.set_role(mul, roles.FORWARD)
    block.ops.append(mul)
    return scaled


def _round_parameters(program: Program, startup: Program) -> None:
    """What decorate's amp_init does after the startup: each low-precision parameter becomes its value rounded to the
    format (cast from its float32 master, which the startup copied from it first), so a float32 startup or parameter
    file starts O2 from Paddle's values."""
    masters = {name for op in program.global_block.ops for slot in ("MasterParam", "master_param")
               for name in op.input(slot)}
    block = startup.global_block
    for op in list(block.ops):
        if op.type == "cast" and op.output("Out")[0] in masters:
            back = complete(make_op("cast", {"X": op.output("Out")}, {"Out": op.input("X")},
                                    {"in_dtype": int(VarType.FP32), "out_dtype": op.attrs["in_dtype"]}))
            roles.set_role(back, roles.FORWARD)
            block.ops.append(back)


def _rate_of_shape_one(program: Program, startup: Program) -> None:
    """decorate declares a learning rate given as a number [1], where the optimizer alone declares it []."""
    rates = {name for op in program.global_block.ops for name in op.input("LearningRate")}
    for op in startup.global_block.ops:
        name = op.output("Out")[0] if op.type == "fill_constant" else None
        if name in rates and program.global_block.var(name).shape == []:
            op.set_attr("shape", [1])
            for block in (program.global_block, startup.global_block):
                block.var(name).shape = [1]


def _initial(options: AmpOptions) -> dict[str, tuple[int, float]]:
    return {"loss_scaling": (VarType.FP32, options.init_loss_scaling), "num_good_steps": (VarType.INT32, 0),
            "num_bad_steps": (VarType.INT32, 0)}


def _scaling_vars(block: Block, options: AmpOptions) -> dict[str, str]:
    """loss_scaling_0 (and, scaling dynamically, num_good_steps_0 and num_bad_steps_0): persistable [1] vars."""
    names = {}
    for name, (dtype, _) in _initial(options).items():
        if name == "loss_scaling" or options.dynamic:
            names[name] = block.create_var(block.unused_name(name + "_{}"), [1], dtype, persistable=True,
                                           stop_gradient=True).name
    return names
