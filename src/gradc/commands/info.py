"""`gradc info`: what a program is and what it takes, on one screen: its format and kind, its inputs and outputs,
its parameters, the loss it may have and the op types it uses (gradc show lists everything)."""

from __future__ import annotations

import json
import sys
from collections import Counter
from functools import partial

import click

from .. import schedule_record
from ..backward.frozen import recorded_frozen
from ..backward.sparse import SPARSE_TABLE_GRADS
from ..io import STDIO, detect_format, load, parse_program
from ..ir import Block, Program, VarType, dtype_name
from ..listing import BOOKKEEPING
from ..pairing import BACKWARD, FEED_FETCH, OPTIMIZER, initialiser_program, op_kinds
from ..rnn_flat import flat_buffers
from ..training.data_init import set_from_data
from ..training.detections import nms_rows
from .info_loss import loss_found
from .info_optimizer import optimizer_facts, optimizer_line, without_updates
from .info_params import file_facts, file_lines, loading_facts, loading_lines

FORMAT_NAMES = {"pb": "legacy ProgramDesc (binary)", "pbtxt": "legacy ProgramDesc (text)",
                "json": "legacy ProgramDesc (protobuf JSON)", "pir": "Paddle 3 PIR JSON"}
LISTED = 12   # parameters listed by name; the rest counted
SEEDED_DRAWS = ("uniform_random", "gaussian_random", "truncated_gaussian_random")   # initialisers with a seed attr


@click.command()
@click.argument("program", type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead, listing every parameter and "
              "op type.")
@click.option("--params", "params", multiple=True, type=click.Path(), help="Parameter files read against the program "
              "as train and run load them, later ones winning: which parameters they give, which they leave to a "
              "startup program, their values the program has no var for or of another shape. Repeatable.")
def info(program, as_json, params):
    """Summarise a program: its format and kind, inputs, outputs, parameters, loss and op types; or what a parameter
    file (.npz, .pdparams, .pdopt) holds."""
    if program != STDIO and str(program).endswith((".npz", ".pdparams", ".pdopt")):
        if params:
            raise click.UsageError("--params: give the program as PROGRAM")
        facts = file_facts(program)
        click.echo(json.dumps(facts) if as_json else "\n".join(file_lines(facts)))
        return
    if params and program == STDIO:
        raise click.UsageError("--params: with a program file, not one piped in")
    prog = load(program, lazy=False) if params else None   # loaded once, for the summary and the files' facts
    facts = summary(program, prog)
    lines = _lines(facts)
    if params:
        facts["params"] = loading_facts(prog, params)
        lines += loading_lines(facts["params"], len(facts["parameters"]))
    click.echo(json.dumps(facts) if as_json else "\n".join(lines))


def summary(program: str, prog: Program | None = None) -> dict:
    """What `gradc info` says about the program file (``prog``: its program, if loaded already), as plain data
    (--json prints it)."""
    from ..passes.backward import refuses_again  # the compiler's rule, for the kind line
    if program == STDIO:   # read once: a pipe gives its bytes one time
        head = sys.stdin.buffer.read()
        prog = parse_program(head, detect_format(program, head), "<stdin>", lazy=False)
    else:
        prog = prog if prog is not None else load(program, lazy=False)
        with open(program, "rb") as handle:
            head = handle.read(4096)
    fmt = detect_format(program, head[:4096])
    block = prog.global_block
    startup = initialiser_program(block)
    loss, how = (None, "none (an initialiser program)") if startup else loss_found(prog)
    persistable = [var for var in block.vars.values() if var.persistable and var.dtype is not None]
    params = [var for var in persistable if var.is_parameter]
    fetched = [name for op in _by_col(block, "fetch") for name in op.input("X")]
    ops, kinds = _with_updates(prog)
    written = {name for op in ops for name in op.output_names()}
    optimized = {name for op, kind in zip(ops, kinds) if kind == OPTIMIZER for name in op.output_names()}
    buffers = {name: sum(_size(block.var(cell).shape) for cell in cells) for name, cells in flat_buffers(block).items()}
    optimizer = optimizer_facts(ops, kinds, written)
    if optimizer is not None:   # a Paddle scheduler gradc compile recorded, which the host steps
        optimizer["schedule"] = schedule_record.recorded(prog)
    inner = loss is not None and refuses_again(prog, loss) is None   # its loss computed from gradients inside
    from_data = set_from_data(block) if loss is None and not startup and _inputs(block) else []
    if startup:
        kind = "startup program: its ops initialise persistable vars (gradc run, train --startup)"
    elif from_data:   # actnorm's data-dependent init, which a startup's place would run unfed
        kind = (f"initialiser from the data: sets {', '.join(from_data)} from the input(s) "
                f"{', '.join(_inputs(block))} (gradc train --data-init runs it on the first batch)")
    elif optimizer:
        kind = _kind(Counter(kinds), loss is not None, len(ops) > len(block.ops))
    else:
        kind = without_updates(Counter(kinds), partial(_kind, inner=inner), loss is not None)
    rows = sorted(nms_rows(block) & set(fetched))   # a detector's kept boxes: no class scores to score
    if rows and kind.startswith("inference model"):
        kind = (f"inference model (feed and fetch ops) of a detector: run it, or score its kept boxes (gradc evaluate "
                f"--detections {rows[0]},BOXES,LABELS: mAP)")
    return {"file": str(program), "format": FORMAT_NAMES.get(fmt, fmt), "blocks": len(prog.blocks),
            "ops": prog.num_ops(), "kind": kind,
            "equal_draws": _equal_draws(block),
            "inputs": [_var(block, name) for name in _inputs(block)], "outputs": [_var(block, n) for n in fetched],
            # a saved inference model marks no parameter: its persistable vars are what --params gives
            "parameters_marked": bool(params),
            "parameters": [_var(block, var.name) for var in sorted(params or persistable, key=lambda v: v.name)],
            # an RNN's flat buffer repeats its cells' values (Paddle's dygraph layer does not list it)
            "parameter_values": sum(_size(var.shape) for var in params or persistable if var.name not in buffers),
            "flat_buffers": buffers,
            # trainable=False (a MoCo key encoder, a frozen backbone): parameters no backward gives a gradient
            # or told by what they compute, as compile tells them (backward.frozen)
            "frozen_parameters": sorted({var.name for var in params if var.stop_gradient} | {*recorded_frozen(block)}),
            # of a training program: what its optimizer ops write (a style transfer's image alone, its net frozen)
            "trained_parameters": _trained(kinds, params, optimized),
            "other_persistable": len(persistable) - len(params) if params else 0,
            "other_persistable_kinds": _other_persistable(ops, kinds, persistable, written) if params else {},
            "optimizer": optimizer,
            "sparse_gradients": _sparse_gradients(block, ops, kinds),
            "loss": loss, "loss_found": how, "op_types": dict(Counter(op.type for op in block.ops).most_common())}


def _with_updates(prog: Program) -> tuple[list, list[str]]:
    """The main block's ops and kinds, and those of conditional blocks of updates (Paddle's gradient merge's)."""
    block = prog.global_block
    ops, kinds = list(block.ops), op_kinds(block)
    for op in block.ops:
        sub = prog.blocks[op.attrs["sub_block"]] if op.type == "conditional_block" else None
        if sub is not None and OPTIMIZER in (sub_kinds := op_kinds(sub)):
            ops, kinds = ops + list(sub.ops), kinds + sub_kinds
    return ops, kinds


def _trained(kinds: list[str], params: list, optimized: set[str]) -> list[str] | None:
    """The parameters the optimizer ops write (``optimized``), or None for a program without them."""
    if OPTIMIZER not in kinds:
        return None
    return sorted(var.name for var in params if var.name in optimized)


# forward op -> its table slot, whose gradient is sparse when the op has is_sparse
SPARSE_TABLES = {grad.removesuffix("_grad"): slot.removesuffix("@GRAD") for grad, slot in SPARSE_TABLE_GRADS.items()}


def _sparse_gradients(block: Block, ops: list, kinds: list[str]) -> dict[str, str]:
    """Each parameter whose gradient is a SelectedRows (Embedding(sparse=True), nce or hsigmoid with is_sparse),
    with how it is updated: its optimizer op, and lazy_mode where that op has it on (the rows a batch touches only);
    of a forward program, the op whose is_sparse asks for it (a training program's gradient may be dense all the
    same: gradc's PIR writes are)."""
    updated, asked = {}, {}
    for op, kind in zip(ops, kinds):
        if kind == OPTIMIZER and op.inputs.get("Grad"):
            grad = block.find_var(op.inputs["Grad"][0])
            if grad is not None and grad.type == VarType.SELECTED_ROWS:
                updated[op.inputs["Param"][0]] = op.type + (", lazy_mode" if op.attr("lazy_mode") else "")
        elif op.type in SPARSE_TABLES and op.attr("is_sparse") and (table := op.inputs.get(SPARSE_TABLES[op.type])):
            asked[table[0]] = f"{op.type} is_sparse"
    return dict(sorted((updated if OPTIMIZER in kinds else asked).items()))


def _other_persistable(ops: list, kinds: list[str], persistable: list, written: set[str]) -> dict[str, int]:
    """How many persistable vars that are no parameter the program keeps as an optimizer's state, writes (running
    statistics, counters), or only reads: a frozen weight (stop_gradient, Paddle's trainable=False)."""
    updating = {name for op, kind in zip(ops, kinds) if kind == OPTIMIZER
                for name in (*op.input_names(), *op.output_names())}
    counts = Counter("optimizer state" if var.name in updating else "written: statistics, counters"
                     if var.name in written else "read only: frozen weights" for var in persistable
                     if not var.is_parameter)
    return dict(sorted(counts.items()))


def _listed(kinds: dict[str, int]) -> str:
    return "; ".join(f"{kind} {count}" for kind, count in kinds.items())


def _lines(facts: dict) -> list[str]:
    lines = [f"{facts['file']}: {facts['format']}, {facts['blocks']} block(s), {facts['ops']} ops",
             f"kind: {facts['kind']}", "inputs:"]
    lines += [f"  {_shown(var)}" for var in facts["inputs"]] or ["  none"]
    if facts["outputs"]:
        lines += ["outputs (fetch ops):", *(f"  {_shown(var)}" for var in facts["outputs"])]
    params, others, partly = facts["parameters"], facts["other_persistable"], False
    if facts["parameters_marked"]:
        repeated = ", ".join(f"{name} {size:,}" for name, size in facts["flat_buffers"].items())
        frozen, trained = len(facts["frozen_parameters"]), facts["trained_parameters"]
        partly = trained is not None and len(trained) < len(params)   # a frozen net's: which ones move
        lines.append(f"parameters: {len(params)} ({facts['parameter_values']:,} values"
                     + (f"; {frozen} of them frozen (trainable=False): no gradient" if frozen else "")
                     + (f"; only {len(trained)} trained by the optimizer ops, marked *" if partly else "")
                     + (f"; RNN flat buffers repeating their cells' values: {repeated}" if repeated else "") + ")"
                     + (f"; other persistable vars: {others} ({_listed(facts['other_persistable_kinds'])})"
                        if others else ""))
    else:
        lines.append(f"persistable vars (the values --params gives): {len(params)} ({facts['parameter_values']:,} "
                     f"values)")
    marked = set(facts["trained_parameters"]) if partly else set()
    frozen_ones = set(facts.get("frozen_parameters", ()))
    lines += [f"  {_shown(var)}{'  *' if var['name'] in marked else '  frozen' if var['name'] in frozen_ones else ''}"
              for var in params[:LISTED]]
    if len(params) > LISTED:
        lines.append(f"  ... and {len(params) - LISTED} more (gradc show lists them)")
    if facts["sparse_gradients"]:
        lines.append("sparse gradients (SelectedRows: only the rows a batch touches): " + ", ".join(
            f"{name} ({how})" for name, how in facts["sparse_gradients"].items()))
    lines.append(f"loss: {facts['loss']} ({facts['loss_found']})" if facts["loss"] else f"loss: {facts['loss_found']}")
    if facts["optimizer"]:
        lines.append(optimizer_line(facts["optimizer"]))
    for draw in facts["equal_draws"]:
        lines.append(f"note: {', '.join(draw['vars'])} start equal: their initialisers draw with one seed, "
                     f"{draw['seed']} (a program's random_seed is every initialiser's: ensemble members start as one "
                     f"net)")
    types = facts["op_types"]
    shown = ", ".join(f"{name} {count}" for name, count in list(types.items())[:LISTED])
    more = f", ... ({len(types)} types; gradc show lists the ops)" if len(types) > LISTED else ""
    lines.append(f"op types in block 0: {shown}{more}")
    return lines


def _equal_draws(block: Block) -> list[dict]:
    """Vars whose initialisers draw the same values (one op type, the same seed (0 draws afresh), shape and
    attributes): {"vars": names, "seed": the seed} for each group."""
    groups: dict[tuple, dict] = {}
    for op in block.ops:
        if op.type in SEEDED_DRAWS and op.attrs.get("seed"):
            attrs = tuple(sorted((name, repr(value)) for name, value in op.attrs.items() if name not in BOOKKEEPING))
            groups.setdefault((op.type, attrs), {"vars": [], "seed": op.attrs["seed"]})["vars"] += op.output("Out")
    return [group for group in groups.values() if len(group["vars"]) > 1]


def _kind(kinds: Counter, has_loss: bool, merged: bool = False, inner: bool = False) -> str:
    if kinds[OPTIMIZER]:
        # Paddle's gradient merge: the updates run in a conditional block, once every k_steps runs
        where = ", in a conditional block: an update every k_steps runs" if merged else ""
        return f"training program ({kinds[BACKWARD]} backward, {kinds[OPTIMIZER]} optimizer ops{where})"
    if kinds[BACKWARD] and inner:   # the loss is computed from the gradients: GradNorm's norms, a gradient penalty
        return (f"forward program with gradients inside ({kinds[BACKWARD]} backward ops, paddle.static.gradients', "
                f"that its loss is computed from): gradc compile appends its backward")
    if kinds[BACKWARD]:
        return f"program with a backward ({kinds[BACKWARD]} backward ops, no optimizer)"
    if kinds[FEED_FETCH] and has_loss:   # a Paddle 3 program saved with its loss as the fetch target
        return "forward program with feed and fetch ops and a loss: gradc compile appends its backward"
    if kinds[FEED_FETCH]:
        return ("inference model (feed and fetch ops): run it, score it on labelled data (gradc evaluate), or "
                "fine-tune it with a loss added (gradc compile --add-loss cross-entropy|mse|ctc)")
    if not has_loss:   # a sampler, or several candidates: compile would refuse it as it is
        return "forward program without a loss gradc picks: gradc run runs it; gradc compile needs --loss NAME"
    return "forward program: gradc compile appends its backward"


def _by_col(block: Block, kind: str) -> list:
    """The feed or fetch ops in column order: the order Paddle's Predictor names a saved model's inputs and outputs
    (save_inference_model writes the feed ops last column first)."""
    return sorted((op for op in block.ops if op.type == kind), key=lambda op: int(op.attrs.get("col", 0)))


def _inputs(block: Block) -> list[str]:
    feeds = [name for op in _by_col(block, "feed") for name in op.output("Out")]
    return feeds or sorted(name for name, var in block.vars.items() if var.need_check_feed)


def _var(block: Block, name: str) -> dict:
    var = block.find_var(name)
    if var is None or var.dtype is None:
        return {"name": name}
    return {"name": name, "dtype": dtype_name(var.dtype), "shape": None if var.shape is None else list(var.shape)}


def _shown(var: dict) -> str:
    if "dtype" not in var:
        return var["name"]
    return f"{var['name']}  {var['dtype']}{var['shape'] if var['shape'] is not None else '[?]'}"


def _size(shape) -> int:
    total = 1
    for dim in shape or ():
        total *= max(dim, 1)   # an unknown dim counted once
    return total

