"""Export of pylayer and pylayer_grad to PIR, as Paddle's PIR spells a static_pylayer and its backward:

    pylayer(Input) {forward}         -> pd_op.pylayer(inputs) {forward; cf.yield(outs)}
    pylayer_grad(Out@GRAD) {user's}  -> pd_op.pylayer(output grads) {cf.tuple_pop; user's; cf.yield(input grads)}

Both carry backward_function_id -1: PIR keeps a backward_fn out of the program text (the id names a Python
callable), so a pylayer whose backward block no pylayer_grad runs has no PIR form. As for the other control flow
(gradc.pir.export_control), the forward region pushes the values of it that the backward block reads.
"""

from __future__ import annotations

from ..ir import EMPTY_VAR, GRAD_SUFFIX, OpDesc
from ..ops.pylayer import BACKWARD, FORWARD, inner_grad
from .export_control import emitting_into, restore_saved, save_for_backward
from .export_grads import zeros_like
from .graph import Attr, Block, Region

NO_FUNCTION = {"backward_function_id": Attr("a_i32", -1)}


def _runs_backward(program, backward: int) -> bool:
    return any(op.type == "pylayer_grad" and op.attrs.get("backward_block") == backward
               for block in program.blocks for op in block.ops)


def _emit_pylayer(exporter, operands: list, outs: list[str], body: Block) -> None:
    results = [exporter.new_value(name) for name in outs]
    exporter.emit("pd_op.pylayer", operands, results, dict(NO_FUNCTION)).regions = [Region([body])]
    exporter.current.update(zip(outs, results))


def pylayer(op: OpDesc, exporter) -> None:
    blocks = op.attrs["blocks"]
    if len(blocks) > BACKWARD and not _runs_backward(exporter.program, blocks[BACKWARD]):
        raise exporter.fail(f"its backward block {blocks[BACKWARD]} has no PIR form (PIR keeps a backward_fn out of "
                            f"the program): compile the program's backward first (pylayer_grad exports as a "
                            f"pd_op.pylayer), or save it in the legacy format")
    operands = [exporter.read(name) for name in op.input("Input")]
    before, body = dict(exporter.current), Block()
    exporter.export_block(exporter.program.blocks[blocks[FORWARD]], body)
    save_for_backward(exporter, blocks[FORWARD], body)
    with emitting_into(exporter, body):
        exporter.emit("cf.yield", [exporter.read(name) for name in op.output("Out")], [], {})
    exporter.current = before
    _emit_pylayer(exporter, operands, op.output("Out"), body)


def pylayer_grad(op: OpDesc, exporter) -> None:
    backward = exporter.program.blocks[op.attrs["backward_block"]]
    given = op.input("Out@GRAD")
    operands = [exporter.read(name) for name in given]
    pairs = [(x, out) for x, out in zip(op.input("Input"), op.output("Input@GRAD")) if out != EMPTY_VAR]
    written = {name for inner in backward.ops for name in inner.output_names()}
    before, body = dict(exporter.current), Block()
    with emitting_into(exporter, body):
        restore_saved(exporter, backward.forward_block_idx)
        exporter.current.update((inner_grad(name), value) for name, value in zip(given, operands))
        exporter.export_block(backward, body)
        grads = [exporter.current[x + GRAD_SUFFIX] if x + GRAD_SUFFIX in written else zeros_like(exporter, x)
                 for x, _ in pairs]
        exporter.emit("cf.yield", grads, [], {})
    exporter.current = before
    _emit_pylayer(exporter, operands, [out for _, out in pairs], body)
