"""A plan as straight-line code: one Python function per plan, generated once and compiled, that makes the inline
steps' numpy calls itself (gradc.executor.direct.inline), calls the other direct steps, and hands every other op,
and every op whose fast case does not hold, to the executor's loop (its kernel, stores, errors, as always). The
frees after each op are ``pop`` calls of constant names. No loop, no step object and no dict of slots per op
remain: they cost as much as a small op's arithmetic.

The function is ``run(V, P, S, loop)``: V the run's own values, P the caller's (parameters), S the run's scope
(for vars further out), ``loop(rows)`` the executor's loop over plan rows (the op's kernel). Inline steps write V
only: the executor runs this code only when no outer scope holds a var they write. The vars no op writes are read
once a run (``C``), and an op whose inputs are known arrays skips the checks they make needless (facts.py)."""

from __future__ import annotations

import re
from collections import Counter

from ..ir import VarType
from .direct.inline import GUARD, OUTPUTS, ROW_NAMES, Inline, row_code, slot_token
from .facts import RULES, Unwritten
from .liveness import shape_stub
from .scope import MISSING

PART_OPS = 64   # ops per compiled function: compiling a big function takes memory in proportion to its size


class _Source:
    def __init__(self):
        self.parts: list[list[str]] = []
        self.lines: list[str] = []
        self.names = {**ROW_NAMES, "stub": shape_stub, "MISSING": MISSING, "WARM": range(8)}
        self.shared: dict[tuple[str, int], str] = {}   # (kind, id of a dtype) -> the one global naming its constant
        self.facts: dict[str, tuple] = {}   # var -> (dtype, rank or None) it has while ``sure`` holds
        self.unwritten: dict[str, int] = {}   # var no op writes -> its declared rank
        self.once: tuple[list, list, list] = ([], [], [])   # names, dtypes, ranks of the vars read into C
        self.indices: dict[str, int] = {}   # var -> its index in C
        self.writers: Counter = Counter()   # var -> how many ops write it (facts hold for a var of one writer)

    def start_part(self) -> None:
        # CPython 3.11 specializes a function's bytecode from its 8th call or backward jump on: 8 empty loop turns
        # make the first call run specialized code, as every call of a training loop does
        self.lines = [f"def part{len(self.parts)}(V, P, S, loop, C, sure):", "    pop = V.pop", "    for _ in WARM:",
                      "        pass"]
        self.parts.append(self.lines)

    def read_once(self, name: str, dtype) -> str:
        """The code reading a var no op writes from C (its first reader's dtype is what the code assumes)."""
        names, dtypes, ranks = self.once
        if name not in self.facts:
            self.facts[name] = (dtype, self.unwritten[name])
            self.indices[name] = len(names)
            names.append(name)
            dtypes.append(dtype)
            ranks.append(self.unwritten[name])
        return f"C[{self.indices[name]}]"

    def bind(self, name: str, value) -> str:
        self.names[name] = value
        return name

    def bind_shared(self, kind: str, dtype, value) -> str:
        """One global per kind and dtype (a dtype, its zero), not one per op: the ops read one dict entry, and a
        big plan's globals stay few (the plan's steps keep the dtypes, and so their ids, alive)."""
        key = (kind, id(dtype))
        if key not in self.shared:
            self.shared[key] = self.bind(f"{kind}{len(self.shared)}", value)
        return self.shared[key]

    def emit(self, indent: int, *lines: str) -> None:
        self.lines.extend("    " * indent + line for line in lines)


def build(plan) -> callable:
    """The plan's ``run`` function."""
    source = _generate(plan)
    namespace = dict(source.names)
    for index, lines in enumerate(source.parts):
        exec(compile("\n".join(lines) + "\n", f"<gradc plan part {index}>", "exec"), namespace)
    parts = [namespace[f"part{index}"] for index in range(len(source.parts))]
    unwritten = Unwritten(*source.once)

    def run(V, P, S, loop):
        C, sure = unwritten.read(V, P, S)
        for part in parts:
            sure = part(V, P, S, loop, C, sure)
    return run


def source_text(plan) -> str:
    """The code ``build`` compiles for the plan, to read (it is not kept: a big program's runs to ~1 KB an op)."""
    return "".join("\n".join(lines) + "\n" for lines in _generate(plan).parts)


def _generate(plan) -> _Source:
    """The plan's code, in parts of PART_OPS ops, and the names it refers to."""
    source = _Source()
    source.unwritten = _unwritten(plan)
    source.writers = Counter(name for step in plan.steps for name in dict.fromkeys(step.ctx.op.output_names()))
    made: set[str] = set()   # vars an earlier inline or direct step writes into V: read from V alone
    held = {name: f"h{n}" for n, name in enumerate(_held(plan))}   # vars that live in a local, not in V
    pending: list = []       # the rows of the ops since the last direct step: one call of the loop runs them
    for idx, step in enumerate(plan.steps):
        if idx % PART_OPS == 0:
            _flush(source, pending)
            source.start_part()
        if step.direct is None:
            pending.append((step.kernel, step.ctx, step, None))
            continue
        _flush(source, pending)
        row = source.bind(f"R{idx}", ((step.kernel, step.ctx, step, None),))
        source.emit(1, f"# {idx} {step.ctx.op.type}")
        drop, present = "", set()
        inline = isinstance(step.direct, Inline)
        if inline:
            drop, present = _inline(source, idx, step.direct, made, set(step.frees), held)
        else:
            call = source.bind(f"D{idx}", step.direct)
            source.emit(1, "try:", f"    ok = {call}(V, P, S) is None", "except Exception:", "    ok = False",
                        "if ok:")
        _frees(source, step, present, held)
        source.emit(1, "else:")
        if inline:   # its outputs may be anything now: no later op takes its inputs' facts for granted
            source.emit(2, "sure = False")
        _fallback(source, row, step, held)
        if drop:   # no reference outlives the op: a value freed after its last reader goes now
            source.emit(1, f"{drop} = None")
        made.update(name for _, specs in step.writes for name, _, _ in specs)
    _flush(source, pending)
    for lines in source.parts:
        lines.append("    return sure")
    return source


def _unwritten(plan) -> dict[str, int]:
    """The dense vars inline steps read that no op of the plan writes, frees or shrinks (parameters: one value a
    run), with their declared ranks."""
    read = {name: step.ctx.block.find_var(name) for step in plan.steps if isinstance(step.direct, Inline)
            for name in step.direct.ins.values()}
    changed = {name for step in plan.steps for name in (*step.ctx.op.output_names(), *step.frees, *step.shrinks)}
    return {name: len(var.shape) for name, var in read.items()
            if name not in changed and var is not None and var.type == VarType.DENSE_TENSOR}


def _held(plan) -> list[str]:
    """The vars that can live in a local of one part rather than in V: each written by one inline step and
    only read, after it, by inline steps of the same part, the last of which frees it (no stub, not kept)."""
    writers: dict[str, list[int]] = {}
    readers: dict[str, list[int]] = {}
    for idx, step in enumerate(plan.steps):
        for name in step.ctx.op.input_names():
            readers.setdefault(name, []).append(idx)
        for name in step.ctx.op.output_names():
            writers.setdefault(name, []).append(idx)
    stubs = {name for step in plan.steps for name in step.shrinks}
    inline = [step.direct if isinstance(step.direct, Inline) else None for step in plan.steps]
    held = []
    for name, written in writers.items():
        reads, first = readers.get(name), written[0]
        if len(written) > 1 or not reads or name in stubs or inline[first] is None or reads[0] <= first \
                or name in plan.steps[first].frees or name not in plan.steps[reads[-1]].frees \
                or all(name != out for out, _ in inline[first].outs.values()):
            continue
        if all(r // PART_OPS == first // PART_OPS and inline[r] is not None and name in inline[r].ins.values()
               for r in reads):
            held.append(name)
    return held


def _fallback(source: _Source, row: str, step, held: dict[str, str]) -> None:
    """The op through the loop: its held inputs put in V for the kernel (and taken out again unless the loop
    frees them), its held outputs taken from V."""
    inputs = [name for name in dict.fromkeys(step.ctx.op.input_names()) if name in held]
    for name in inputs:
        source.emit(2, f"if {held[name]} is not MISSING:", f"    V[{name!r}] = {held[name]}")
    source.emit(2, f"loop({row})")
    for name in inputs:
        source.emit(2, f"{held[name]} = None" if name in step.frees else f"V.pop({name!r}, None)")
    for name in dict.fromkeys(step.ctx.op.output_names()):
        if name in held:
            source.emit(2, f"{held[name]} = V.pop({name!r}, MISSING)")


def _flush(source: _Source, rows: list) -> None:
    if rows:
        first = rows[0][1].op_idx
        source.emit(1, f"# {first}-{rows[-1][1].op_idx} through their kernels",
                    f"loop({source.bind(f'K{first}', tuple(rows))})")
        rows.clear()


def _inline(source: _Source, idx: int, step: Inline, made: set[str], dying: set[str],
            held: dict[str, str]) -> tuple[str, set[str]]:
    """The row's numpy calls, its guard and the output checks (those the inputs' facts leave to decide, while
    ``sure``), then ``if ok:`` and the stores of the outputs that outlive the op; returns the locals it binds and
    the vars it read from V alone (there for certain)."""
    guard, exprs = step.row[GUARD], {slot: expr for slot, expr in step.row[OUTPUTS].items() if slot in step.outs}
    consts = {"ZERO": step.zero, "DTYPE": step.dtype}

    def fill(text: str) -> str:
        text = row_code(text, lambda name: _attr(source, idx, step, name))
        return re.sub(r"\b(ZERO|DTYPE)\b", lambda m: source.bind_shared(m[1], step.dtype, consts[m[1]]), text)
    source.emit(1, "try:")
    for slot, name in step.ins.items():
        read = held[name] if name in held else f"V[{name!r}]" if name in made else \
            source.read_once(name, step.dtype) if name in source.unwritten else \
            f"V[{name!r}] if {name!r} in V else P[{name!r}] if {name!r} in P else S.find({name!r})"
        source.emit(2, f"_{slot_token(slot)} = {read}")
    trusted = _trusted(source, step)   # the guard left while ``sure``, if the results need no check then
    guard, exprs = fill(guard), {slot: fill(expr) for slot, expr in exprs.items()}
    trusted = None if trusted is None else fill(trusted)
    if re.search(r"\ba(\[|\.get\()", guard + (trusted or "") + "".join(exprs.values())):
        source.emit(2, f"a = {source.bind(f'O{idx}', step.op)}.attrs")
    if trusted is not None:
        source.emit(2, "if sure:")
        _computed(source, 3, trusted, exprs, "True")
        source.emit(2, "else:")
    checks = " and ".join(f"type(o{n}) is ndarray and o{n}.dtype is {source.bind_shared('T', dtype, dtype)}"
                          for n, dtype in enumerate(step.outs[slot][1] for slot in exprs))
    _computed(source, 2 + (trusted is not None), guard, exprs, checks)
    source.emit(1, "except Exception:", "    ok = False", "if ok:")
    for n, slot in enumerate(exprs):
        name = step.outs[slot][0]
        if name not in dying:   # a grad nobody reads (a bias grad not fetched) is only checked
            source.emit(2, f"{held[name]} = o{n}" if name in held else f"V[{name!r}] = o{n}")
    names = " = ".join([*(f"_{slot_token(slot)}" for slot in step.ins), *(f"o{n}" for n in range(len(exprs)))])
    return names, {name for name in step.ins.values() if name in made and name not in held} \
        - {name for name, _ in step.outs.values()}


def _computed(source: _Source, indent: int, guard: str, exprs: dict[str, str], ok: str) -> None:
    """``o0 = ...`` of each output and ``ok``, under the guard."""
    guarded = guard != "True"
    if guarded:
        source.emit(indent, f"if {guard}:")
    for n, expr in enumerate(exprs.values()):
        source.emit(indent + guarded, f"o{n} = {expr}")
    source.emit(indent + guarded, f"ok = {ok}")
    if guarded:
        source.emit(indent, "else:", "    ok = False")


def _trusted(source: _Source, step: Inline) -> str | None:
    """The op's guard (in its row's notation) given its inputs' facts, where they make its results' check needless
    (else None); the facts of its outputs recorded either way (their dtypes checked or implied, their ranks from
    the inputs')."""
    rule = RULES[step.op.type]
    facts = {slot: source.facts.get(name) for slot, name in step.ins.items()}
    ranks = {slot: fact[1] if fact else None for slot, fact in facts.items()}
    for slot, rank in rule.out_ranks({slot: ranks.get(slot) for slot in rule.needs}).items():
        if slot in step.outs and source.writers[step.outs[slot][0]] == 1:
            source.facts[step.outs[slot][0]] = (step.outs[slot][1], rank)
    known = all(slot in facts and facts[slot] is not None and facts[slot][0] is step.dtype for slot in rule.needs)
    if not known or not rule.result_follows(ranks) or any(dtype is not step.dtype for _, dtype in step.outs.values()):
        return None
    return rule.guard(ranks)


def _attr(source: _Source, idx: int, step: Inline, name: str) -> str:
    """An attribute read live: the op's own (a KeyError if it is gone: the kernel then runs), else the default."""
    if name in step.op.attrs:
        return f"a[{name!r}]"
    value = step.defaults.get(name, MISSING)
    default = repr(value) if type(value) in (bool, int, str, type(None)) else source.bind(f"A{idx}_{name}", value)
    return f"(a[{name!r}] if {name!r} in a else {default})"   # no method call: cheaper than a.get


def _frees(source: _Source, step, present: set[str], held: dict[str, str]) -> None:
    """The values that die after the op (``present``: those in V for certain), and those only read for their
    shape from here on (kept as stubs)."""
    if source.lines[-1].endswith("if ok:") and not step.frees and not step.shrinks:
        source.emit(2, "pass")
    for name in step.frees:
        source.emit(2, f"{held[name]} = None" if name in held else
                    f"del V[{name!r}]" if name in present else f"pop({name!r}, None)")
    for name in step.shrinks:
        source.emit(2, f"if type(v := V.get({name!r})) is ndarray:", f"    V[{name!r}] = stub(v)")
