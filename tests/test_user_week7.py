"""An extender's week (docs/tools.md): a user's own op (a swish with a float attribute and a learnable beta input),
defined in a plugin file as README's "Your own op" says, compiled, checked and run from the command line; and the
mistakes an extender makes, each one `gradc: error:` line naming the op and the fix. Each op type is registered
under a name of its own test (the registry is the process's)."""

import textwrap

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from gradc.passes import base as passes_base

# swish_beta: Out = X * sigmoid(alpha * Beta * X), Beta a learnable [1] parameter
PLUGIN = '''
import numpy as np
import gradc
from gradc.executor import kernel

def _sigmoid(z):
    return 1 / (1 + np.exp(-z))

gradc.defop("{op}", ["X", "Beta"], ["Out"], attrs={{"alpha": 1.0}}, infer=gradc.same_as("X"),
            grad=gradc.grad_op("X", "Beta"))

@kernel("{op}")
def forward(k):
    x, beta = k.x("X"), k.x("Beta")
    return {{"Out": {forward_result}}}

@kernel("{op}_grad")
def backward(k):
    x, beta, alpha, dout = k.x("X"), k.x("Beta"), k.attr("alpha"), k.x("Out@GRAD")
    s = _sigmoid(alpha * beta * x)
    slope = s * (1 - s) * alpha
    return k.grads({{"X@GRAD": lambda: dout * (s + x * slope * beta),
                    "Beta@GRAD": lambda: np.sum(dout * x * slope * x).reshape(beta.shape).astype(beta.dtype)}})
'''
RIGHT = "x * _sigmoid(k.attr('alpha') * beta * x)"


@pytest.fixture(autouse=True)
def _forget_the_plugins_registrations():
    """The commands run in this process: what their plugins registered (every name starts w7) goes after each test,
    so that the registry other tests count is gradc's own."""
    yield
    for table in (gradc.registry.OPS, gradc.executor.KERNELS, passes_base.PASSES):
        for name in [name for name in dict.keys(table) if name.startswith(("w7_", "w7-"))]:
            table.pop(name)


def _plugin(tmp_path, op: str, forward_result: str = RIGHT, extra: str = "") -> str:
    path = tmp_path / f"{op}_plugin.py"
    path.write_text(PLUGIN.format(op=op, forward_result=forward_result) + textwrap.dedent(extra))
    return str(path)


def _model(tmp_path, op: str) -> tuple[str, str, str]:
    """forward.pb (an fc, the op, a mean), its startup.pb and a feed of 3 rows. Built with an elementwise_mul
    of the same slots' shapes, its type then changed: the op is registered only in the command's run."""
    net = gradc.ProgramBuilder()
    hidden = net.fc(net.data("x", [-1, 4]), 4)
    beta = net.parameter("beta", [1], scale=1.0)
    net.mean(net.op("elementwise_mul", {"X": hidden, "Y": beta}, prefix=op)[0])
    op_desc = net.program.global_block.ops[2]
    op_desc.type, op_desc.inputs, op_desc.attrs, op_desc.attr_types = op, {"X": [hidden], "Beta": [beta]}, {}, {}
    op_desc.set_attr("alpha", 1.5)
    gradc.save(net.program, tmp_path / "forward.pb")
    gradc.save(net.startup, tmp_path / "startup.pb")
    np.savez(tmp_path / "feed.npz", x=np.random.default_rng(0).standard_normal((3, 4)).astype("float32"))
    return str(tmp_path / "forward.pb"), str(tmp_path / "startup.pb"), str(tmp_path / "feed.npz")


def _one_error_line(done, *phrases) -> str:
    assert done.returncode == 1, done.stdout
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gradc: error: "), done.stderr
    for phrase in phrases:
        assert phrase in lines[0], lines[0]
    return lines[0]


def test_a_plugin_op_compiles_checks_runs_verifies_and_is_described(tmp_path):
    plugin = _plugin(tmp_path, "w7_swish")
    forward, startup, feed = _model(tmp_path, "w7_swish")
    compiled = gradc_cli("--plugin", plugin, "compile", forward, "-o", tmp_path / "train.pb")
    assert compiled.returncode == 0 and "3 parameter gradients" in compiled.stdout, compiled.stderr
    checked = gradc_cli("--plugin", plugin, "check", forward, "--feed", feed, "--startup", startup)
    assert checked.returncode == 0 and "3 var(s) checked" in checked.stdout, checked.stdout + checked.stderr
    assert gradc_cli("--plugin", plugin, "verify", tmp_path / "train.pb").returncode == 0
    described = gradc_cli("--plugin", plugin, "ops", "w7_swish")
    assert "grad: w7_swish_grad(X, Beta, Out@GRAD) -> X@GRAD?, Beta@GRAD?" in described.stdout
    assert "alpha: FLOAT = 1" in described.stdout


def test_a_program_with_an_op_gradc_does_not_know_says_how_to_register_it(tmp_path):
    """Was: 'no grad maker' / 'no kernel', as if the op were known; a Paddle custom op's program gives the same."""
    forward, startup, feed = _model(tmp_path, "relu")
    program = gradc.load(forward)
    program.global_block.ops[2].type = "w7_never_registered"
    gradc.save(program, tmp_path / "custom.pb")
    for command in (["compile", tmp_path / "custom.pb", "-o", tmp_path / "train.pb"],
                    ["run", tmp_path / "custom.pb", "--feed", feed, "--startup", startup]):
        _one_error_line(gradc_cli(*command), "block 0, op 2 (w7_never_registered)",
                        "op type(s) gradc does not know: w7_never_registered", "gradc.register_op",
                        "--plugin")


def test_a_maker_that_raises_is_named_as_the_plugins_bug_not_gradcs(tmp_path):
    """Was: 'gradc: internal error: RuntimeError: ... (please report this ...)'."""
    plugin = _plugin(tmp_path, "w7_raises", extra='''
        @gradc.register_op("w7_raises_too", inputs=["X", "Beta"], infer=gradc.same_as("X"))
        def broken_maker(g):
            return [g.op("scale", {"X": g.OG("Out")}, {"Out": g.IG("X")}, {"scale": g.attr("alpah")})]

        gradc.executor.kernel("w7_raises_too")(forward)
    ''')
    forward, _, _ = _model(tmp_path, "w7_raises_too")
    _one_error_line(gradc_cli("--plugin", plugin, "compile", forward, "-o", tmp_path / "train.pb"),
                    "block 0, op 2 (w7_raises_too): its grad maker", "broken_maker raised KeyError", "alpah",
                    "fix the maker")


def test_a_maker_asking_for_a_slot_its_op_lacks_is_refused(tmp_path):
    """Was: compiled, the input grad silently never written (the fc's gradients all zero)."""
    plugin = _plugin(tmp_path, "w7_slots", extra='''
        @gradc.register_op("w7_misspelt", inputs=["X", "Beta"], infer=gradc.same_as("X"))
        def misspelt(g):
            return [g.op("scale", {"X": g.OG("Out")}, {"Out": g.IG("Y")})]

        gradc.executor.kernel("w7_misspelt")(forward)
    ''')
    forward, _, _ = _model(tmp_path, "w7_misspelt")
    _one_error_line(gradc_cli("--plugin", plugin, "compile", forward, "-o", tmp_path / "train.pb"),
                    "block 0, op 2 (w7_misspelt)", "input slot 'Y'", "its inputs: X, Beta", "fix the slot name")
    assert not (tmp_path / "train.pb").exists()


def test_a_grad_op_given_a_slot_its_definition_lacks_is_refused_at_the_maker(tmp_path):
    """Was: 'block 0, op 6 (elementwise_mul): the required input slot 'Y' is empty', at a grad op the user never
    wrote, from the verification of the compiled program."""
    plugin = _plugin(tmp_path, "w7_grad_slots", extra='''
        @gradc.register_op("w7_wrong_target", inputs=["X", "Beta"], infer=gradc.same_as("X"))
        def wrong_target(g):
            return [g.op("elementwise_mul", {"X": g.I("X"), "Z": g.OG("Out")}, {"Out": g.IG("X")})]

        gradc.executor.kernel("w7_wrong_target")(forward)
    ''')
    forward, _, _ = _model(tmp_path, "w7_wrong_target")
    _one_error_line(gradc_cli("--plugin", plugin, "compile", forward, "-o", tmp_path / "train.pb"),
                    "block 0, op 2 (w7_wrong_target)", "builds op 'elementwise_mul' with input slot 'Z'",
                    "its inputs: X, Y", "the maker of 'w7_wrong_target'")


def test_a_kernel_result_of_the_wrong_shape_fails_at_its_op(tmp_path):
    """Was: 'block 0, op 7 (elementwise_add_grad): cannot reshape array of size 6 into shape (3,4)', far from the
    kernel at fault (the forward run alone gave no error)."""
    plugin = _plugin(tmp_path, "w7_shape", forward_result="x[:, :2]")
    forward, startup, feed = _model(tmp_path, "w7_shape")
    _one_error_line(gradc_cli("--plugin", plugin, "run", forward, "--feed", feed, "--startup", startup),
                    "block 0, op 2 (w7_shape): its kernel", "forward computed 'w7_shape_0.tmp_0' with shape [3, 2]",
                    "declares [-1, 4]")


def test_a_plugin_registering_a_built_in_type_again_is_told_of_replace(tmp_path):
    for name, text in (("op", 'gradc.defop("relu", ["X"], infer=gradc.same_as("X"))'),
                       ("kernel", 'gradc.executor.kernel("relu")(lambda k: {"Out": k.x("X")})')):
        path = tmp_path / f"again_{name}.py"
        path.write_text(f"import gradc\nimport gradc.executor\n{text}\n")
        _one_error_line(gradc_cli("--plugin", path, "ops", "relu"), f"cannot import plugin '{path}'",
                        "'relu'", "pass replace=True")


def test_a_second_derivative_through_a_grad_op_without_a_maker_says_what_to_register(tmp_path):
    _plugin_module = _plugin(tmp_path, "w7_second")
    assert gradc_cli("--plugin", _plugin_module, "ops", "w7_second").returncode == 0   # registers it here
    net = gradc.ProgramBuilder()
    x = net.data("x", [3, 4], stop_gradient=False)
    loss = net.mean(net.op("w7_second", {"X": x, "Beta": net.parameter("beta", [1])})[0])
    x_grad = gradc.gradients(net.program, loss, ["x"])[0]
    penalty = net.mean(net.op("square", {"X": x_grad})[0])
    try:
        gradc.gradients(net.program, penalty, ["beta"])
    except gradc.GradError as exc:
        assert "w7_second_grad differentiates w7_second" in str(exc)
        assert "gradc.registry.defgrad('w7_second_grad', grad=MAKER)" in str(exc)
    else:
        raise AssertionError("a second derivative through a grad op with no maker")


PASSES = '''
from gradc.passes import Pass, PassConditionError, register_pass

@register_pass
class PromisesTooMuch(Pass):
    name = "w7-promises"
    def apply(self, program):
        return program.num_ops()
    def ensures(self, program):
        raise PassConditionError("two scales in a row are left")

@register_pass
class Crashes(Pass):
    name = "w7-crashes"
    def apply(self, program):
        return 1 / 0
'''


def test_a_plugin_pass_failing_names_itself_and_its_step(tmp_path):
    """Was: 'gradc: error: two scales in a row are left' (which pass?), and for the crash 'gradc: internal error:
    ZeroDivisionError: division by zero (please report this ...)'."""
    (tmp_path / "w7_passes.py").write_text(PASSES)
    plugin = str(tmp_path / "w7_passes.py")
    forward, _, _ = _model(tmp_path, "relu")
    program = gradc.load(forward)
    program.global_block.ops[2].type, program.global_block.ops[2].inputs = "relu", {"X": ["fc_0.tmp_1"]}
    gradc.save(program, forward)
    _one_error_line(gradc_cli("--plugin", plugin, "compile", forward, "-o", tmp_path / "t.pb", "--pass", "w7-promises"),
                    "pass 'w7-promises': ensures(): two scales in a row are left")
    _one_error_line(gradc_cli("--plugin", plugin, "compile", forward, "-o", tmp_path / "t.pb", "--pass", "w7-crashes"),
                    "pass 'w7-crashes' (w7_passes.Crashes) raised ZeroDivisionError in apply(): division by zero",
                    "fix the pass")
