"""Checks of each op against its definition (slots, attribute kinds) and its inference (shapes and dtypes agree with
the declared vars), as one-line problems naming block, op and var (gradc.verify holds the structure and var checks).

A var an op rewrites in place with another shape (Paddle's Dirac initializer flattens a weight, scatters into it and
reshapes it back) is declared with its last writer's shape only: until that writer, its readers are checked against
the shape the op before them gave it. An output Paddle declares with a made-up rank (OpDef.runtime_rank_outputs) is
carried with its inferred shape, and so is every output whose declaration Paddle derived from such a var's."""

from __future__ import annotations

from collections.abc import Iterator

from . import registry
from .errors import ProgramError, op_location
from .ir import Program, dtype_fits, dtype_name
from .ops.complex_inputs import complex_input_problem, declares_complex
from .ops.infer import InferContext
from .passed_checks import DEFINITIONS, passed, record
from .shapes import shape_fits
from .verify import raise_first


def _definition_problems(block, idx: int, op) -> Iterator[str]:
    """Slots hold what the op's definition allows (a required slot a var, a single slot at most one) and
    attributes have the declared kind."""
    for problem in (registry.slot_problem(op), registry.attr_type_problem(op)):
        if problem:
            yield f"{op_location(block.idx, idx, op.type)}: {problem}"


def check_definitions(program: Program) -> None:
    """Every op of every block against its definition (slots, attribute kinds): what the backward pass and
    the executor assume before they read an op. A loop, not a generator per op: a backward checks thousands.
    Skipped for a program that passed it, or check_shapes, with no change since (the verify pass before a backward)."""
    if passed(program, DEFINITIONS):
        return
    checks = registry.DefinitionChecks()
    for block in program.blocks:
        for idx, op in enumerate(block.ops):
            problem = checks[op.type](op)
            if problem:
                raise ProgramError(f"{op_location(block.idx, idx, op.type)}: {problem}")
    record(program, DEFINITIONS)


def check_inputs(block, idx: int, op) -> None:
    """The op's inference on its declared inputs: attributes out of range and inputs that cannot go together
    fail as they do at compile time. Declared outputs are not compared (Paddle's can be stale), and inputs the
    rule cannot read are left to the kernel."""
    try:
        _inferred_if_readable(block, idx, op)
    except ProgramError:
        reshaped = _reshaped_before(block, idx)   # only where it fails: most programs rewrite no var's shape
        if reshaped.shapes.keys().isdisjoint(op.input_names()):
            raise
        _inferred_if_readable(block, idx, op, reshaped.shapes)


def _inferred_if_readable(block, idx: int, op, reshaped: dict | None = None) -> None:
    try:
        op_inference(block, idx, op, reshaped)
    except ProgramError:
        raise
    except Exception:  # noqa: BLE001 - shapes the rule cannot read: the kernel sees the values
        return


def check_complex_inputs(block, idx: int, op) -> None:
    """An op whose kernel has no complex form fails on a complex input var, as its inference fails on a bad one."""
    if problem := complex_input_problem(block, op):
        InferContext(op, block, idx).fail(problem)


def op_inference(block, idx: int, op, reshaped: dict | None = None) -> tuple[InferContext, dict] | None:
    """The op's inference context and results, or None without a rule, with an input shape unknown, or with an
    attribute known only at run time (a var's value)."""
    opdef = registry.get(op.type)
    if opdef is None or opdef.infer is None or op.var_attrs or not _input_shapes_known(block, op, reshaped):
        return None
    ctx = InferContext(op, block, idx, reshaped)
    return ctx, opdef.infer(ctx)


def _input_shapes_known(block, op, reshaped: dict | None) -> bool:
    own = block.vars   # most names are the block's own: a dict lookup before the walk up the ancestors
    for args in op.inputs.values():
        for name in args:
            var = own.get(name) or block.find_var(name)
            if var is None or (var.shape is None and not (reshaped and name in reshaped)):
                return False
    return True


def check_shapes(program: Program) -> None:
    """Check every op against its definition and run its inference; raise on the first problem."""
    raise_first(shape_problems(program))
    record(program, DEFINITIONS)   # shape_problems checked every op's definition first


def shape_problems(program: Program) -> Iterator[str]:
    """Each op's definition problems, then its shapes and dtypes by inference (not for an op whose definition
    is broken)."""
    checks = registry.DefinitionChecks()
    # the outer vars a while body writes change shape from one iteration to the next (a growing cache, a condition
    # a broadcast makes [1]) while Paddle declares them as the loop starts: the body's shapes read their dims unknown
    carried = loop_outer_writes(program)
    for block in program.blocks:
        complex_values = declares_complex(block)   # one sweep of the vars: most programs skip the op checks
        reshaped = _Reshaped(block, carried.get(block.idx, frozenset()))
        for idx, op in enumerate(block.ops):
            if checks[op.type](op):
                yield from _definition_problems(block, idx, op)
                continue
            try:
                _check_inference(block, idx, op, reshaped)
                if complex_values:
                    check_complex_inputs(block, idx, op)
            except ProgramError as exc:
                yield str(exc)


def loop_outer_writes(program: Program) -> dict[int, frozenset]:
    """By while body: the vars its ops write that it does not declare (the outer vars the loop carries)."""
    carried = {}
    for block in program.blocks:
        for op in block.ops:
            if op.type == "while":
                for _, body in op.block_refs():
                    own = program.blocks[body].vars
                    carried[body] = frozenset(name for op in program.blocks[body].ops for name in op.output_names()
                                              if name not in own)
    return carried


class _Reshaped:
    """The vars of a block that its ops so far left with another shape than their declaration's, which a later
    op of the block rewrites; in a while body, the vars the loop carries, their dims unknown."""

    __slots__ = ("block", "shapes", "carried", "misdeclared", "_last_writers")

    def __init__(self, block, carried: frozenset = frozenset()):
        self.block, self.carried, self._last_writers = block, carried, None
        self.misdeclared = set()   # vars whose declaration Paddle made up, or derived from a made-up one
        self.shapes = {name: [-1] * len(var.shape) for name in carried
                       if (var := block.find_var(name)) is not None and var.shape is not None}

    def written_after(self, idx: int, name: str) -> bool:
        if self._last_writers is None:   # once a block, and only for a block with an output off its declaration
            self._last_writers = {out: i for i, op in enumerate(self.block.ops) for out in op.output_names()}
        return self._last_writers.get(name, -1) > idx


def carried_shapes(block) -> dict[str, list[int]]:
    """The shapes the checks carry in place of declarations Paddle made up (OpDef.runtime_rank_outputs) or derived
    from one: what the values hold, their unknown dims -1."""
    if not any(getattr(registry.get(op.type), "runtime_rank_outputs", None) for op in block.ops):
        return {}   # no made-up declaration to carry past: no inference needed
    reshaped = _reshaped_before(block, len(block.ops))
    return {name: reshaped.shapes[name] for name in reshaped.misdeclared}


def _reshaped_before(block, idx: int) -> _Reshaped:
    """The vars ops before ``idx`` left with another shape than their declaration's (which a later op restores)."""
    reshaped = _Reshaped(block)
    for i, op in enumerate(block.ops[:idx]):
        try:
            _check_inference(block, i, op, reshaped)
        except Exception:  # noqa: BLE001 - an op whose shapes cannot be read tells nothing about its outputs
            continue
    return reshaped


def _check_inference(block, idx: int, op, reshaped: _Reshaped) -> None:
    """The op's inferred outputs against their declarations; an output rewritten later with its declared shape
    may differ (``reshaped`` then holds its shape for the ops in between)."""
    try:
        inferred = op_inference(block, idx, op, reshaped.shapes)
    except ProgramError:
        raise
    except Exception as exc:  # noqa: BLE001 - inputs the rule cannot read: say so, naming the op
        InferContext(op, block, idx, reshaped.shapes).fail(f"its shapes cannot be inferred from these inputs and "
                                                    f"attributes ({type(exc).__name__}: {exc})")
    if inferred is None:
        return
    ctx, results = inferred
    own, outputs = block.vars, op.outputs
    for slot, result in results.items():
        for name, (shape, dtype) in zip(outputs.get(slot, ()), result if isinstance(result, list) else [result]):
            var = own.get(name) or block.find_var(name)
            if var is None:
                continue
            declared = var.shape   # equal lists (most outputs) need no walk over the dims
            if name in reshaped.carried:   # the next iteration's value: its declaration is the first's
                if shape is not None:
                    reshaped.shapes[name] = [-1] * len(shape)
            elif declared is not None and shape is not None and declared != shape and not shape_fits(
                    declared, shape, block.program.version, op.type == "fill_constant"):
                if slot in registry.get(op.type).runtime_rank_outputs or (   # made up, or derived from one
                        reshaped.misdeclared and not reshaped.misdeclared.isdisjoint(op.input_names())):
                    reshaped.misdeclared.add(name)
                elif not reshaped.written_after(idx, name):
                    ctx.fail(f"output '{name}' is declared with shape {declared}, but the inputs give {shape}")
                reshaped.shapes[name] = shape
            elif reshaped.shapes:
                reshaped.shapes.pop(name, None)
            if var.dtype is not None and dtype is not None and not dtype_fits(var.dtype, dtype):
                ctx.fail(f"output '{name}' is declared {dtype_name(var.dtype)}, but the inputs give "
                         f"{dtype_name(dtype)}")

