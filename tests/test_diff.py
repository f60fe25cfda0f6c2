"""gradc diff: a structural diff per block (vars by name, ops aligned by order), attribute filters, exit 0 when
equal and 1 when not; gradc's compile of each Paddle fixture against Paddle's own backward program differs
in a few lines at most (docs/tools.md says what and why)."""

import json

import deep_nets
import gradc
import gradc.diff
from cli_inprocess import gradc_cli
from fixtures import DATA
from gradc.diff import diff_programs


def test_same_program_exit_0_and_a_changed_one_exit_1(tmp_path):
    path = DATA / "mlp" / "backward.pb"
    same = gradc_cli("diff", path, path)
    assert same.returncode == 0 and same.stdout.strip().endswith("are the same")
    program = gradc.load(path)
    block = program.global_block
    block.ops[3].set_attr("x_num_col_dims", 2)
    block.ops[3].set_attr("op_callstack", ["somewhere"])
    del block.ops[5]
    block.create_var("extra", [2, 3])
    block.vars["fc_0.tmp_0"].shape = [-1, 32]
    changed = tmp_path / "changed.pb"
    gradc.save(program, changed)
    result = gradc_cli("diff", path, changed)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0] == "block 0: 1 op removed, 1 op changed, 1 var added, 1 var changed"
    assert "  + var extra : float32[2, 3]" in lines
    assert "  ~ var fc_0.tmp_0: shape [32, 32] -> [-1, 32]" in lines
    assert "  ~ op 3 mul: attr x_num_col_dims: 1 -> 2" in lines   # op_callstack is bookkeeping: left out
    assert any(line.startswith("  - op 5 softmax_with_cross_entropy(") for line in lines)
    everything = gradc_cli("diff", path, changed, "--all-attrs")
    assert "  ~ op 3 mul: attr op_callstack: [] -> ['somewhere']; attr x_num_col_dims: 1 -> 2" in everything.stdout
    filtered = gradc_cli("diff", path, changed, "--ignore-attr", "x_*")
    assert "x_num_col_dims" not in filtered.stdout and filtered.returncode == 1


def test_an_absent_attribute_equals_its_registered_default():
    program = gradc.load(DATA / "mlp" / "forward.pb")
    other = program.clone()
    del other.global_block.ops[0].attrs["x_num_col_dims"]
    assert diff_programs(program, other) == []
    other.global_block.ops[0].set_attr("y_num_col_dims", 2)
    assert diff_programs(program, other) == ["block 0: 1 op changed", "  ~ op 0 mul: attr y_num_col_dims: 1 -> 2"]


# In loops over tensor arrays gradc keeps copies of the loop counter (@SAVE@) where Paddle decrements it, and
# adds the grads of an array slot read twice where Paddle overwrites: every read and write in the body shows
# (and, as outside loops, Paddle copies split's num/sections onto the concat that is its grad).
LOOP_DIFFERENCES = ("@SAVE@", "@RENAME@", "sum", "increment", "while_grad", "@GRAD", "block ", "concat: attr num")


def test_gradc_against_paddle_backward_programs_is_short():
    """Over every Paddle fixture gradc compiles: most are the same, none without a loop differs in more than a
    handful of lines (saved copies, the order of sums, a sparse grad, the dead branch Paddle differentiates down
    to an op without a grad, such as crf_decoding's path cast to float, or generate_proposals' three outputs
    concatenated into the loss: 15 lines; a nested cond's grad blocks, whose renamed grads gradc numbers by the grad
    block and Paddle by the forward block: 19 lines; docs/tools.md); loops differ only in the ways LOOP_DIFFERENCES
    names. A forward that already holds grad ops (paddle.incubate.autograd's vjp, jvp, Jacobian) is left out of the
    longest: gradc differentiates a grad op with plain ops, where Paddle writes *_grad_grad and *_triple_grad ops."""
    compared, same, longest = 0, 0, 0
    for backward in sorted(DATA.glob("**/backward.pb")):
        meta = backward.parent / "meta.json"
        if not (backward.parent / "forward.pb").exists() or "loss" not in json.loads(meta.read_text()):
            continue
        forward = gradc.load(backward.parent / "forward.pb")
        program = forward.clone()
        # kl_div's targets detached, as Paddle's kldiv_loss_grad leaves them (gradc gives them gradients otherwise)
        targets = [op.input("Target")[0] for op in forward.global_block.ops if op.type == "kldiv_loss"]
        try:
            gradc.append_backward(program, json.loads(meta.read_text())["loss"], no_grad_set=targets)
        except gradc.GradError:
            continue
        lines = diff_programs(gradc.load(backward), program)
        compared += 1
        same += not lines
        if any(op.type == "while" for op in program.global_block.ops):
            assert all(any(kind in line for kind in LOOP_DIFFERENCES) for line in lines), (backward, lines)
        elif not any(gradc.registry.get(op.type).grad_op_of for op in forward.global_block.ops):
            longest = max(longest, len(lines))
    assert compared > 300 and same > 0.85 * compared and longest <= 19, (compared, same, longest)


def test_blocks_only_in_one_program():
    one = gradc.load(DATA / "mlp" / "forward.pb")
    two = gradc.load(DATA / "cond" / "forward.pb")
    lines = diff_programs(one, two)
    assert "block 1: only in the second program (3 ops)" in lines


def _mlp_and_training_program(layers: int):
    net, loss, _ = deep_nets.mlp(layers, 8, 4)
    trained = net.program.clone()
    gradc.append_backward(trained, loss)
    return net.program, trained


def test_large_blocks_are_anchored_on_the_same_ops(monkeypatch):
    """Above MAX_PAIRS a block is aligned on ops equal in type and slots first (difflib over the types alone is
    quadratic); on a program and its training program, and on the Paddle fixtures, that alignment is the one
    difflib gives."""
    pairs = [_mlp_and_training_program(20)]
    for name in ("mlp", "conv", "transformer", "tensor_ops"):
        forward = gradc.load(DATA / name / "forward.pb")
        trained = forward.clone()
        gradc.append_backward(trained, json.loads((DATA / name / "meta.json").read_text())["loss"])
        pairs += [(forward, trained), (gradc.load(DATA / name / "backward.pb"), trained)]
    whole = [diff_programs(a, b) for a, b in pairs]
    monkeypatch.setattr(gradc.diff, "MAX_PAIRS", 4)
    assert [diff_programs(a, b) for a, b in pairs] == whole
    assert sum(len(lines) for lines in whole) > 100


def test_a_large_training_program_against_its_forward_program():
    forward, trained = _mlp_and_training_program(400)   # 1,204 and 2,405 ops: beyond MAX_PAIRS
    assert len(forward.global_block.ops) * len(trained.global_block.ops) > gradc.diff.MAX_PAIRS
    lines = diff_programs(forward, trained)
    added = len(trained.global_block.ops) - len(forward.global_block.ops)
    assert lines[0].startswith(f"block 0: {added} ops added, ") and "removed" not in lines[0], lines[0]
    assert sum(line.startswith("  + op ") for line in lines) == added


def test_too_large_a_gap_pairs_up_by_position_and_type(monkeypatch):
    """Every var renamed (no op the same) and one op more: the ends that agree by type pair up, and the op in
    between shows as added."""
    monkeypatch.setattr(gradc.diff, "MAX_PAIRS", 4)
    forward, _ = _mlp_and_training_program(3)
    renamed = forward.clone()
    block = renamed.global_block
    for op in block.ops:
        for slots in (op.inputs, op.outputs):
            for slot, args in slots.items():
                slots[slot] = [f"{name}_v2" for name in args]
    block.ops.insert(4, block.ops[4].copy())
    lines = diff_programs(forward, renamed)
    assert sum(line.startswith("  + op ") for line in lines) == 1
    assert sum(line.startswith("  ~ op ") for line in lines) == len(forward.global_block.ops)
    assert not any(line.startswith("  - op ") for line in lines)


def test_large_blocks_keep_their_alignment_between_distant_changes():
    """Ops repeated and dropped far apart in a 1,204-op program: the ops between are anchored one by one (each is
    unique), so the diff is a line per change, not shifted blocks of changes."""
    forward, _ = _mlp_and_training_program(400)
    changed = forward.clone()
    ops = changed.global_block.ops
    ops.insert(101, ops[100].copy())
    dropped = [ops.pop(501).type]
    ops.insert(801, ops[800].copy())
    dropped.append(ops.pop(1101).type)
    lines = diff_programs(forward, changed)
    assert lines[0] == "block 0: 2 ops added, 2 ops removed", lines[:6]
    assert [line.split("(")[0] for line in lines[1:]] == [
        f"  + op 101 {ops[101].type}", f"  - op 500 {dropped[0]}", f"  + op 801 {ops[801].type}",
        f"  - op 1100 {dropped[1]}"], lines
