"""`gradc show --dot/--svg/--png`: the program as a Graphviz graph, in the viewer's styles. Ops are boxes
coloured by kind (the loss with a red border), vars are small rounded boxes with dtype and shape (one per
write of a name, so in-place updates do not loop back), each grad op has a dashed purple edge to the forward
op it differentiates, and each sub-block is a cluster inside the block of the op that runs it."""

from __future__ import annotations

import shutil
import subprocess

from ..errors import GradcError
from ..ir import EMPTY_VAR, Block, Program, VarType, dtype_name
from ..pairing import FEED_FETCH, is_grad, marked_losses, op_kinds, pair_grad_ops
from .layout import visible_vars
from .style import GRAD_LINK, KIND_COLORS, LOSS_BORDER, VAR_COLORS

_DATA_TYPES = (VarType.DENSE_TENSOR, VarType.SELECTED_ROWS, VarType.DENSE_TENSOR_ARRAY)


def quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _var_label(block: Block, name: str) -> str:
    var = block.visible_var(name)
    if var is None or var.dtype is None:
        return name
    return f"{name}\n{dtype_name(var.dtype)}{var.shape if var.shape is not None else ''}"


def _var_style(block: Block, name: str) -> tuple[str, str]:
    var = block.visible_var(name)
    if is_grad(name):
        return VAR_COLORS["grad"]
    return VAR_COLORS["persistable" if var is not None and var.persistable else "plain"]


class _Writer:
    def __init__(self, program: Program):
        self.program = program
        self.lines: list[str] = []
        self.drawn = {0}
        self.runs: dict[int, list[int]] = {}   # block -> the sub-blocks its ops run (each under its first runner)
        placed = set()
        for block in program.blocks:
            for op in block.ops:
                for _, sub in op.block_refs():
                    if 0 < sub < len(program.blocks) and sub != block.idx and sub not in placed:
                        placed.add(sub)
                        self.runs.setdefault(block.idx, []).append(sub)

    def block(self, block: Block, depth: int) -> None:
        pad = "  " * depth
        kinds, losses = op_kinds(block), marked_losses(block)
        hidden = {n for n, v in visible_vars(self.program, block).items() if v.type not in _DATA_TYPES}
        latest: dict[str, str] = {}
        for idx, op in enumerate(block.ops):
            fill, line = KIND_COLORS[kinds[idx]]
            style = "rounded,filled,dashed" if kinds[idx] == FEED_FETCH else "rounded,filled"
            extra = f', color="{LOSS_BORDER}", penwidth=2.5' if idx in losses else ""
            self.lines.append(f'{pad}b{block.idx}_op{idx} [label={quote(f"{op.type}  #{idx}")}, shape=box, '
                              f'style="{style}", fillcolor="{fill}", color="{line}"{extra}];')
            for name in dict.fromkeys(op.input_names()):
                if name == EMPTY_VAR or name in hidden:
                    continue
                if name not in latest:
                    latest[name] = self._var(block, name, f"b{block.idx}_in{len(latest)}", pad)
                self.lines.append(f"{pad}{latest[name]} -> b{block.idx}_op{idx};")
            for k, name in enumerate(dict.fromkeys(op.output_names())):
                if name == EMPTY_VAR or name in hidden:
                    continue
                latest[name] = self._var(block, name, f"b{block.idx}_op{idx}_out{k}", pad)
                self.lines.append(f"{pad}b{block.idx}_op{idx} -> {latest[name]};")
        for sub in self.runs.get(block.idx, []):
            self.cluster(sub, depth)

    def _var(self, block: Block, name: str, node: str, pad: str) -> str:
        fill, line = _var_style(block, name)
        self.lines.append(f'{pad}{node} [label={quote(_var_label(block, name))}, shape=box, style="rounded,filled", '
                          f'fillcolor="{fill}", color="{line}", fontsize=9, height=0.25, margin="0.06,0.02"];')
        return node

    def cluster(self, idx: int, depth: int) -> None:
        if idx in self.drawn:   # a malformed program whose blocks run each other
            return
        self.drawn.add(idx)
        pad = "  " * depth
        block = self.program.blocks[idx]
        backward = (f", backward of block {block.forward_block_idx}"
                    if block.forward_block_idx is not None and block.forward_block_idx >= 0 else "")
        self.lines.append(f"{pad}subgraph cluster_b{idx} {{")
        self.lines.append(f'{pad}  label={quote(f"block {idx}{backward}")}; style="rounded,filled"; '
                          f'fillcolor="#eef2ff"; color="#a5b4fc"; fontcolor="#3730a3";')
        self.block(block, depth + 1)
        self.lines.append(f"{pad}}}")


def program_dot(program: Program, title: str = "program") -> str:
    writer = _Writer(program)
    writer.lines += ["digraph program {",
                     f'  graph [rankdir=TB, label={quote(title)}, labelloc=t, fontname="Helvetica", newrank=true];',
                     '  node [fontname="Helvetica", fontsize=11];',
                     '  edge [color="#9ca3af", arrowsize=0.6];']
    writer.block(program.global_block, 1)
    for block in program.blocks:   # blocks no op of block 0's tree runs
        writer.cluster(block.idx, 1)
    for grad, fwd in sorted(pair_grad_ops(program).items(), key=lambda item: (item[0].block, item[0].index)):
        writer.lines.append(f'  b{grad.block}_op{grad.index} -> b{fwd.block}_op{fwd.index} [style=dashed, '
                            f'color="{GRAD_LINK}", constraint=false, arrowhead=open];')
    writer.lines.append("}")
    return "\n".join(writer.lines) + "\n"


def render(dot_text: str, fmt: str) -> bytes:
    """The picture Graphviz's `dot` draws of ``dot_text`` (svg or png)."""
    dot = shutil.which("dot")
    if dot is None:
        raise GradcError(f"--{fmt} needs Graphviz's `dot` on PATH (Debian: apt-get install graphviz); "
                         f"--dot FILE writes the graph without it")
    done = subprocess.run([dot, f"-T{fmt}"], input=dot_text.encode(), capture_output=True, check=False)
    if done.returncode != 0:
        reason = (done.stderr.decode(errors="replace").strip().splitlines() or ["no message"])[0]
        raise GradcError(f"Graphviz's dot failed to draw the program (exit {done.returncode}): {reason}")
    return done.stdout
