"""Grad ops pair with the forward op they differentiate (gradc.pairing): checked against what each maker
actually emitted while gradc compiled every Paddle fixture, and on Paddle's own backward programs."""

import json
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

import gradc
from fixtures import DATA
from gradc import registry
from gradc.ir import OpDesc
from gradc.layers import ProgramBuilder
from gradc.pairing import BACKWARD, FORWARD, OPTIMIZER, OpRef, op_kind, pair_grad_ops


@contextmanager
def _recording() -> Iterator[dict[int, OpDesc]]:
    """While open, each maker call remembers which forward op it emitted each grad op for (id(grad op) -> fwd);
    the makers are wrapped once for all the compiles."""
    emitted: dict[int, OpDesc] = {}
    originals = {}
    for opdef in registry.OPS.values():
        if opdef.differentiable:
            originals[opdef.type] = opdef.grad

            def recording(g, maker=opdef.grad):
                ops = maker(g)
                for op in ops:
                    emitted[id(op)] = g.fwd
                return ops

            opdef.grad = recording
    try:
        yield emitted
    finally:
        for type, maker in originals.items():
            registry.OPS[type].grad = maker


# forwards that hold paddle.incubate.autograd's own vjp / jvp / Jacobian: a grad op there and the grad ops gradc's
# makers write for it read and write the same names, so pairing by names cannot tell them apart (left as it is: the
# pairing only labels the viewer's and the diff's lines)
AUTOGRAD_IN_FORWARD = {"incubate_Jacobian", "incubate_jvp", "incubate_vjp"}


def _forward_cases():
    for meta in sorted(DATA.glob("**/meta.json")):
        if (meta.parent / "forward.pb").exists() and "loss" in json.loads(meta.read_text()) \
                and meta.parent.name not in AUTOGRAD_IN_FORWARD:
            yield meta.parent


def test_pairing_matches_what_the_makers_emitted():
    compiled = checked = 0
    with _recording() as emitted:
        for case in _forward_cases():
            program = gradc.load(case / "forward.pb")
            emitted.clear()
            try:
                gradc.append_backward(program, json.loads((case / "meta.json").read_text())["loss"])
            except gradc.GradError:   # ops gradc cannot differentiate yet (the RNN fixtures): nothing to pair
                continue
            compiled += 1
            where = {id(op): OpRef(b.idx, i) for b in program.blocks for i, op in enumerate(b.ops)}
            pairs = pair_grad_ops(program)
            for op_id, fwd in emitted.items():
                if op_id in where:
                    checked += 1
                    assert pairs.get(where[op_id]) == where[id(fwd)], (case.name, where[op_id], fwd)
    assert compiled > 300 and checked > 3000


def test_paddle_backward_programs_pair_each_typed_grad_op_with_its_forward_type():
    for path in sorted(DATA.glob("**/backward.pb")):
        if path.parent.name in AUTOGRAD_IN_FORWARD:
            continue
        program = gradc.load(path)
        pairs = pair_grad_ops(program)
        for ref, fwd in pairs.items():
            grad, forward = program.blocks[ref.block].ops[ref.index], program.blocks[fwd.block].ops[fwd.index]
            if grad.type.endswith("_grad"):   # or a grad op Paddle names otherwise (straight_through_estimator_grad)
                assert forward.type in (grad.type.removesuffix("_grad"), registry.get(grad.type).grad_op_of), \
                    (path, ref, fwd)
        unpaired = [(b.idx, i, op.type) for b in program.blocks for i, op in enumerate(b.ops)
                    if op_kind(b, op) == BACKWARD and op.type.endswith("_grad") and OpRef(b.idx, i) not in pairs]
        assert not unpaired, (path, unpaired)


def test_each_layer_of_a_deep_net_pairs_with_its_own_layer_and_kinds_follow_roles():
    net = ProgramBuilder()
    hidden = net.data("x", [-1, 4])
    for _ in range(6):
        hidden = net.fc(hidden, 4, act="relu")
    program = net.program
    gradc.append_backward(program, net.mean(hidden))
    block = program.global_block
    pairs = pair_grad_ops(program)
    for ref, fwd in pairs.items():
        grad, forward = block.ops[ref.index], block.ops[fwd.index]
        layer = forward.output_names()[0].split(".")[0]
        assert any(name.startswith(layer + ".") for name in grad.input_names()), (grad, forward)
    kinds = [op_kind(block, op) for op in block.ops]
    assert kinds[:19] == [FORWARD] * 19 and set(kinds[19:]) == {BACKWARD}
    assert sum(1 for k in kinds if k == BACKWARD) == len(block.ops) - 19


def test_composite_temporaries_follow_the_grad_op_that_reads_them():
    """cube's maker emits x*x into a temporary, scales it, then multiplies by dOut: all three pair with cube."""
    @gradc.register_op("cube_for_pairing", inputs=["X"])
    def cube_grad(g):
        sq = g.tmp(g.I("X")[0])
        return [g.op("elementwise_mul", {"X": g.I("X"), "Y": g.I("X")}, {"Out": [sq]}),
                g.op("scale", {"X": [sq]}, {"Out": [sq]}, {"scale": 3.0}),
                g.op("elementwise_mul", {"X": [sq], "Y": g.OG("Out")}, {"Out": g.IG("X")})]
    try:
        program = gradc.Program()
        block = program.global_block
        block.create_var("x", [3], stop_gradient=False)
        block.create_var("y", [3])
        block.create_var("loss", [])
        block.append_op("cube_for_pairing", {"X": ["x"]}, {"Out": ["y"]})
        block.append_op("reduce_mean", {"X": ["y"]}, {"Out": ["loss"]}, {"reduce_all": True, "dim": []})
        gradc.gradients(program, "loss", ["x"])
        pairs = pair_grad_ops(program)
        cube_grads = [ref.index for ref, fwd in pairs.items() if fwd.index == 0]
        assert [block.ops[i].type for i in sorted(cube_grads)] == ["elementwise_mul", "scale", "elementwise_mul"]
    finally:
        del registry.OPS["cube_for_pairing"]


def test_a_sum_into_the_grad_it_reads_is_plumbing():
    """Paddle's backward may add a var's later partial grads into its grad itself (sum of x@GRAD and
    x@GRAD@RENAME into x@GRAD): that sum differentiates no op, unlike exponential_'s zero fill of x@GRAD."""
    program = gradc.Program()
    block = program.global_block
    block.create_var("x", [3], stop_gradient=False)
    for name in ("y", "z", "s", "loss"):
        block.create_var(name, [3] if name != "loss" else [])
    block.append_op("relu", {"X": ["x"]}, {"Out": ["y"]})
    block.append_op("tanh", {"X": ["x"]}, {"Out": ["z"]})
    block.append_op("elementwise_add", {"X": ["y"], "Y": ["z"]}, {"Out": ["s"]})
    block.append_op("reduce_mean", {"X": ["s"]}, {"Out": ["loss"]}, {"reduce_all": True, "dim": []})
    gradc.gradients(program, "loss", ["x"])
    tanh_grad, sum_op = (next(op for op in block.ops if op.type == t) for t in ("tanh_grad", "sum"))
    # staged as Paddle's: tanh_grad writes x@GRAD itself, the sum adds relu_grad's part into it
    tanh_grad.outputs["X@GRAD"] = ["x@GRAD"]
    sum_op.inputs["X"] = ["x@GRAD", *sum_op.inputs["X"][1:]]
    pairs = pair_grad_ops(program)
    assert {block.ops[ref.index].type: block.ops[fwd.index].type for ref, fwd in pairs.items()} == {
        "reduce_mean_grad": "reduce_mean", "elementwise_add_grad": "elementwise_add", "tanh_grad": "tanh",
        "relu_grad": "relu"}


@pytest.mark.parametrize("case", ["train_sgd", "train_adam"])
def test_optimizer_ops_are_not_paired(case):
    program = gradc.load(DATA / case / "train.pb")
    block = program.global_block
    optimizer = [i for i, op in enumerate(block.ops) if op_kind(block, op) == OPTIMIZER]
    assert optimizer and not any(OpRef(0, i) in pair_grad_ops(program) for i in optimizer)
