"""One op run or differentiated on its own, for tests of op semantics."""


from gradc import Executor, Scope, append_backward
from gradc.executor.kernels import KERNELS
from gradc.layers import ProgramBuilder
from gradc.shapes import dims_match


def run(op_type, inputs, attrs=None):
    """Run one op built through its shape inference; check every output against its declared shape."""
    net = ProgramBuilder()
    feed, slots = {}, {}
    for slot, value in inputs.items():
        arrays = value if isinstance(value, list) else [value]
        slots[slot] = [net.data(f"{slot.lower()}{i}", list(a.shape), a.dtype.name) for i, a in enumerate(arrays)]
        feed.update(zip(slots[slot], arrays))
    net.op(op_type, slots, attrs)
    op = net.block.ops[-1]
    names = [name for args in op.outputs.values() for name in args]
    values = dict(zip(names, Executor().run(net.program, feed, names, Scope())))
    for name, value in values.items():
        declared = net.block.var(name).shape
        if declared is not None:
            assert len(declared) == value.ndim and all(map(dims_match, declared, value.shape)), \
                f"{op_type} {name}: inferred {declared}, kernel gave {list(value.shape)}"
    return {slot: [values[n] for n in args] if len(args) > 1 else values[args[0]]
            for slot, args in op.outputs.items()}


def kernel_run(op_type, inputs, attrs=None):
    """The kernel's own outputs for ``run``'s op, before the executor casts them to the declared dtypes."""
    kernel, seen = KERNELS[op_type], {}
    KERNELS[op_type] = lambda k: seen.setdefault("outputs", kernel(k))
    try:
        run(op_type, inputs, attrs)
    finally:
        KERNELS[op_type] = kernel
    return seen["outputs"]


def grad_op_of(op_type, inputs, attrs=None, loss_slot="Out"):
    """The grad op gradc emits for sum-of-output with the float inputs as parameters."""
    net = ProgramBuilder()
    slots = {slot: net.data(slot.lower(), list(a.shape), a.dtype.name) for slot, a in inputs.items()}
    for name in slots.values():
        net.block.var(name).is_parameter = net.block.var(name).dtype in (5, 6)
    out = net.op(op_type, slots, attrs, outputs=[loss_slot])[0]
    loss = net.op("reduce_sum", {"X": out}, {"reduce_all": True})[0]
    append_backward(net.program, loss)
    return next(op for op in net.block.ops if op.type not in ("fill_constant", "reduce_sum", "reduce_sum_grad")
                and op.attrs.get("op_role") == 1)
