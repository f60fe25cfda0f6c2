"""The program as the viewer's page reads it: compact JSON (names interned in one string table), with each
block's layout (gradc.viz.layout), each op's slots, attributes, kind and paired forward op, each var's
declaration, the reference text of each op type, and optional value statistics."""

from __future__ import annotations

from .. import registry
from ..executor import KERNELS
from ..ir import Program, VarDesc, VarType, dtype_name
from ..listing import HIDDEN_ATTRS, attr_text
from ..opdoc import describe
from ..pairing import OpRef, marked_losses, op_kinds, pair_grad_ops
from .layout import CELL_W, OP_H, PILL_GAP, PILL_H, layout_block
from .style import GRAD_LINK, KIND_COLORS, KIND_ORDER, LOSS_BORDER, VAR_COLORS

MAX_ATTR_TEXT = 240   # an attribute holding thousands of values (assign_value) shows its start


class Strings:
    """One table of the names and texts the page shows; everything else refers to them by index."""

    def __init__(self):
        self.table: list[str] = []
        self.index: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        found = self.index.get(text)
        if found is None:
            found = self.index[text] = len(self.table)
            self.table.append(text)
        return found


def _var_record(var: VarDesc, strings: Strings) -> list:
    kind = VarType(var.type).name if var.type in VarType._value2member_map_ else f"type{var.type}"
    flags = sum(bit for bit, on in ((1, var.persistable), (2, var.is_parameter), (4, var.stop_gradient),
                                    (8, var.need_check_feed)) if on)
    dtype = dtype_name(var.dtype) if var.dtype is not None else ""
    return [strings(var.name), strings(kind), strings(dtype), var.shape, flags]


def _attr_record(op, strings: Strings) -> list:
    shown = []
    for name, value in op.attrs.items():
        if name in HIDDEN_ATTRS:
            continue
        text = attr_text(value, op.attr_types[name])
        if len(text) > MAX_ATTR_TEXT:
            text = text[:MAX_ATTR_TEXT] + f"... ({len(text)} characters)"
        shown.append([strings(name), strings(text)])
    return shown


def _runs(program: Program) -> dict[int, list[int]]:
    """Each sub-block -> [block, op] of the first op that runs it, else of the first that names it (a pylayer's
    backward block, which its grad op runs, before a backward is compiled)."""
    runs: dict[int, list[int]] = {}
    named: dict[int, list[int]] = {}
    for block in program.blocks:
        for idx, op in enumerate(block.ops):
            running = program.blocks_run_by(op)
            for _, sub in op.block_refs():
                if 0 < sub < len(program.blocks) and sub != block.idx:
                    (runs if sub in running else named).setdefault(sub, [block.idx, idx])
    return {**named, **runs}


def program_model(program: Program, title: str, stats: dict[str, list] | None = None) -> dict:
    strings = Strings()
    pairs = pair_grad_ops(program)
    runs = _runs(program)
    blocks = []
    for block in program.blocks:
        kinds, losses = op_kinds(block), marked_losses(block)
        layout = layout_block(program, block, kinds, pairs)
        ops = []
        for idx, op in enumerate(block.ops):
            pair = pairs.get(OpRef(block.idx, idx))
            sub = next((s for _, s in op.block_refs() if 0 < s < len(program.blocks) and s != block.idx), -1)
            loss = idx in losses
            ops.append([strings(op.type), KIND_ORDER.index(kinds[idx]), *layout.ops[idx], int(loss),
                        pair.block if pair else -1, pair.index if pair else -1, sub,
                        [[strings(slot), [strings(n) for n in args]] for slot, args in op.inputs.items()],
                        [[strings(slot), [strings(n) for n in args]] for slot, args in op.outputs.items()],
                        _attr_record(op, strings)])
        blocks.append({"idx": block.idx, "parent": block.parent_idx, "forward": block.forward_block_idx,
                       "run_by": runs.get(block.idx), "rows": layout.rows, "width": layout.width, "ops": ops,
                       "pills": [[strings(p[0]), *p[1:]] for p in layout.pills],
                       "edges": [e for edge in layout.edges for e in edge],
                       "vars": [_var_record(var, strings) for var in block.vars.values()]})
    types = sorted({op.type for block in program.blocks for op in block.ops})
    docs = {t: describe(registry.OPS[t], KERNELS.knows(t)) for t in types if t in registry.OPS}
    return {"title": title, "strings": strings.table, "blocks": blocks, "docs": docs, "stats": stats or {},
            "style": {"kinds": list(KIND_ORDER), "colors": [KIND_COLORS[k] for k in KIND_ORDER],
                      "loss": LOSS_BORDER, "vars": VAR_COLORS, "link": GRAD_LINK},
            "sizes": {"cell": CELL_W, "op": OP_H, "pill": PILL_H, "gap": PILL_GAP}}

