"""Where each op and var of a block goes in the viewer (gradc.viz.html): rows from top to bottom, three lanes.

The forward ops take rows by the longest path of data they depend on, so the forward pass reads top to
bottom. Each grad op sits in the backward lane on the row of the forward op it differentiates (so the
backward pass climbs back up beside it, and a grad op's link to its forward op is short); an optimizer op
sits in the optimizer lane on the row where its parameter is first used. A backward block (of a while or
cond) has no forward ops of its own: its ops take rows by their own data. Sub-blocks are laid out on
their own and inserted below the op that runs them by the page, which can collapse them.

A cell is an op box with the vars it reads first (inputs nobody in the block wrote before) above it and
the vars it writes below it; each write of a name is its own var node, so edges follow versions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ir import EMPTY_VAR, Block, Program, VarType
from ..pairing import BACKWARD, FEED_FETCH, FORWARD, OPTIMIZER, OpRef

CELL_W, CELL_GAP, LANE_GAP = 200, 24, 90
OP_H, PILL_H, PILL_GAP, ROW_GAP = 30, 18, 3, 30
LANES = {FEED_FETCH: 0, FORWARD: 0, BACKWARD: 1, OPTIMIZER: 2}


@dataclass
class BlockLayout:
    rows: list[list[int]] = field(default_factory=list)    # [input pills height, row height] per row
    ops: list[list[int]] = field(default_factory=list)     # [row, x] per op, in op order
    pills: list[list] = field(default_factory=list)        # [name, row, x, dy, writer op or -1]
    edges: list[list[int]] = field(default_factory=list)   # [pill, reading op]
    width: int = 0


def _longest_path_rows(ops: list[int], block: Block) -> dict[int, int]:
    """Row of each op: one below the lowest op it reads from (latest writer of each name before it)."""
    writer_row: dict[str, int] = {}
    rows = {}
    for idx in ops:
        op = block.ops[idx]
        row = 1 + max((writer_row[n] for n in op.input_names() if n in writer_row), default=-1)
        rows[idx] = row
        for name in op.output_names():
            writer_row[name] = row
    return rows


def assign_rows(block: Block, kinds: list[str], pairs: dict[OpRef, OpRef]) -> list[int]:
    """The row of every op of the block."""
    n = len(block.ops)
    forward = [i for i in range(n) if kinds[i] in (FORWARD, FEED_FETCH)]
    rows = _longest_path_rows(forward, block) if forward else {}
    if not rows:   # a backward block: its own data order
        return [_longest_path_rows(list(range(n)), block)[i] for i in range(n)]
    for i in range(n):
        fwd = pairs.get(OpRef(block.idx, i))
        if kinds[i] == BACKWARD and fwd is not None and fwd.block == block.idx and fwd.index in rows:
            rows[i] = rows[fwd.index]
    bottom = max(rows.values(), default=0)
    readers: dict[str, list[int]] = {}
    for i, op in enumerate(block.ops):
        for name in op.input_names():
            readers.setdefault(name, []).append(i)
    for i in range(n - 1, -1, -1):   # sums and zero fills: on the row of the grad op that reads them
        if i not in rows and kinds[i] == BACKWARD:
            later = [rows[r] for name in block.ops[i].output_names() for r in readers.get(name, ())
                     if r > i and r in rows]
            if later:
                rows[i] = later[0]
    unplaced = [i for i in range(n) if i not in rows and kinds[i] == BACKWARD]
    rows.update({i: bottom + 1 + row for i, row in _longest_path_rows(unplaced, block).items()})
    first_use = {}
    for i in forward:
        for name in block.ops[i].input_names():
            first_use.setdefault(name, rows[i])
    for i in range(n):
        if i not in rows:   # optimizer ops: where their parameter is first used
            op = block.ops[i]
            params = [first_use[name] for name in op.input_names() if name in first_use
                      and (var := block.find_var(name)) is not None and var.is_parameter]
            rows[i] = params[0] if params else min((first_use[nm] for nm in op.input_names() if nm in first_use),
                                                     default=bottom)
    return [rows[i] for i in range(n)]


def _pill_names(names, *skip: set[str]) -> list[str]:
    seen = []
    for name in names:
        if name != EMPTY_VAR and name not in seen and not any(name in s for s in skip):
            seen.append(name)
    return seen


def layout_block(program: Program, block: Block, kinds: list[str], pairs: dict[OpRef, OpRef]) -> BlockLayout:
    rows = assign_rows(block, kinds, pairs)
    n_rows = max(rows, default=-1) + 1
    cells: list[list[list[int]]] = [[[] for _ in range(n_rows)] for _ in range(3)]   # lane -> row -> ops
    for i, row in enumerate(rows):
        cells[LANES[kinds[i]]][row].append(i)
    hidden = {name for name, var in visible_vars(program, block).items()   # feed/fetch lists, step scopes
              if var.type not in (VarType.DENSE_TENSOR, VarType.SELECTED_ROWS, VarType.DENSE_TENSOR_ARRAY)}
    written: set[str] = set()
    first_reader: dict[int, list[str]] = {}
    for i, op in enumerate(block.ops):
        fresh = _pill_names(op.input_names(), hidden, written)
        first_reader[i] = fresh
        written.update(fresh)
        written.update(op.output_names())
    layout = BlockLayout()
    in_pad = [0] * n_rows
    out_h = [0] * n_rows
    for i, op in enumerate(block.ops):
        above = len(first_reader[i]) * (PILL_H + PILL_GAP)
        below = len(_pill_names(op.output_names(), hidden)) * (PILL_H + PILL_GAP)
        in_pad[rows[i]] = max(in_pad[rows[i]], above)
        out_h[rows[i]] = max(out_h[rows[i]], below)
    layout.rows = [[in_pad[r], in_pad[r] + OP_H + out_h[r] + ROW_GAP] for r in range(n_rows)]
    lane_width = [max((len(row) for row in lane), default=0) * (CELL_W + CELL_GAP) for lane in cells]
    lane_x, x = [], 0
    for width in lane_width:
        lane_x.append(x)
        x += width + (LANE_GAP if width else 0)
    layout.width = max(x - LANE_GAP, CELL_W)
    op_x = [0] * len(block.ops)
    for lane, lane_cells in enumerate(cells):
        for row_ops in lane_cells:
            start = lane_x[lane] + (lane_width[lane] - len(row_ops) * (CELL_W + CELL_GAP)) // 2
            for k, i in enumerate(row_ops):
                op_x[i] = start + k * (CELL_W + CELL_GAP)
    layout.ops = [[rows[i], op_x[i]] for i in range(len(block.ops))]
    _place_vars(block, layout, rows, op_x, first_reader, hidden)
    return layout


def visible_vars(program: Program, block: Block) -> dict:
    """The vars the block's ops can name: its own and its ancestors', and a backward block's forward block's
    (each block's first declaration of a name wins)."""
    names = {}
    current = block
    while current is not None:
        for name, var in current.vars.items():
            names.setdefault(name, var)
        forward = current.forward_block_idx
        if forward is not None and 0 <= forward < len(program.blocks):
            for name, var in program.blocks[forward].vars.items():
                names.setdefault(name, var)
        current = current.parent
    return names


def _place_vars(block: Block, layout: BlockLayout, rows, op_x, first_reader, hidden) -> None:
    """Pills for first reads above each op and for writes below it; an edge from the latest version of
    each name an op reads."""
    latest: dict[str, int] = {}
    for i, op in enumerate(block.ops):
        row = rows[i]
        pad = layout.rows[row][0]
        for k, name in enumerate(first_reader[i]):
            dy = pad - (len(first_reader[i]) - k) * (PILL_H + PILL_GAP)
            latest[name] = len(layout.pills)
            layout.pills.append([name, row, op_x[i], dy, -1])
        for name in _pill_names(op.input_names(), hidden):
            if name in latest:
                layout.edges.append([latest[name], i])
        for k, name in enumerate(_pill_names(op.output_names(), hidden)):
            latest[name] = len(layout.pills)
            layout.pills.append([name, row, op_x[i], pad + OP_H + PILL_GAP + k * (PILL_H + PILL_GAP), i])
