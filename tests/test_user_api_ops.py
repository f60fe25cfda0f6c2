"""Legacy op types a Paddle 3.3.1 user writes from public Python APIs in legacy static mode that gradc did not know
(tools/paddle_user_api_ops.py writes the programs): py_func (paddle.static.py_func), which gradc runs with the
Python functions registered under the program's ids, and whose backward it compiles as Paddle does; read_file and
decode_jpeg (paddle.vision.ops), and the save / load / save_combine / load_combine programs paddle.static.io's
save_vars and load_vars run, which gradc refuses to run in one line naming the file (it runs no op that touches a file
a program names; Paddle's CPU kernel of decode_jpeg refuses too), and compiles around; the reader ops of a
DataLoader.from_generator(iterable=False) program, whose batch gradc takes from the feed; and data, which
paddle.static.data writes in legacy mode under FLAGS_enable_pir_in_executor=1, standing for its fed var."""

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA, unpacked
from gradc import register_py_func

OPS = DATA / "user_api_ops"
PADDLE = np.load(OPS / "py_func.npz")
# the functions paddle.static.py_func registered in Paddle's process, under the same ids (tools/paddle_user_api_ops.py)
PY_FUNCS = {0: np.tanh, 1: lambda y, dy: dy * (1 - y * y), 2: lambda a, b, c: (a * b * c, a + b),
            3: lambda a, b, c, prod, total, dprod, dtotal: (dprod * b * c + dtotal, dprod * a * c + dtotal, None)}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    out = unpacked(OPS, tmp_path_factory.mktemp("user_api_ops"), folders=("pir",))
    np.savez(out / "feed.npz", x=PADDLE["x"], w=PADDLE["w"], c=PADDLE["c"])
    return out


@pytest.fixture
def registered():
    """Paddle's functions for one test (the CLI runs in this process), forgotten after it."""
    for callable_id, fn in PY_FUNCS.items():
        register_py_func(callable_id, fn)
    yield
    for callable_id in PY_FUNCS:
        register_py_func(callable_id, None)


def _run(program, out) -> dict:
    run = gradc_cli("run", program, "--feed", out.parent / "feed.npz", "--fetch", "x@GRAD",
                    "--fetch", "w@GRAD", "--fetch", "mean_0.tmp_0", "-o", out)
    assert run.returncode == 0, run.stderr
    return np.load(out)


def test_paddles_py_func_program_runs_to_paddles_gradients(files, registered):
    """Paddle's program (two py_funcs, their two backward py_funcs: one with a skipped input, one writing no grad of
    its input c, @EMPTY@ in its place, whose function returns None there) run by gradc."""
    ours = _run(files / "py_func_paddle.pb", files / "paddle_run.npz")
    np.testing.assert_allclose(ours["mean_0.tmp_0"], PADDLE["loss"], rtol=1e-12, atol=1e-12)
    for grad in ("x@GRAD", "w@GRAD"):
        np.testing.assert_allclose(ours[grad], PADDLE[grad], rtol=1e-12, atol=1e-12, err_msg=grad)


def test_gradc_compiles_py_funcs_backward_as_paddle_does(files, registered):
    """The backward py_funcs read X, Out and Out@GRAD less backward_skip_vars: gradc's compilation of the forward is
    Paddle's program, op for op, and runs to Paddle's numbers."""
    compiled = files / "py_func_gradc.pb"
    assert gradc_cli("compile", files / "py_func.pb", "-o", compiled, "--wrt", "x", "--wrt", "w").returncode == 0
    same = gradc_cli("diff", compiled, files / "py_func_paddle.pb")
    assert same.returncode == 0, same.stdout
    ours = _run(compiled, files / "gradc_run.npz")
    for grad in ("x@GRAD", "w@GRAD"):
        np.testing.assert_allclose(ours[grad], PADDLE[grad], rtol=1e-12, atol=1e-12, err_msg=grad)


def test_a_plugin_registers_the_functions_for_the_cli(files, tmp_path):
    """The README's way for the command line: a --plugin file that registers Paddle's functions by id."""
    plugin = tmp_path / "paddle_funcs.py"
    plugin.write_text("import numpy as np\nimport gradc\n" + "".join(
        f"gradc.register_py_func({i}, {fn})\n" for i, fn in enumerate(
            ["np.tanh", "lambda y, dy: dy * (1 - y * y)", "lambda a, b, c: (a * b * c, a + b)",
             "lambda a, b, c, prod, total, dprod, dtotal: (dprod * b * c + dtotal, dprod * a * c + dtotal, 0)"])))
    try:
        run = gradc_cli("--plugin", plugin, "run", files / "py_func_paddle.pb", "--feed", files / "feed.npz",
                        "--fetch", "w@GRAD", "-o", tmp_path / "out.npz")
    finally:
        for callable_id in PY_FUNCS:
            register_py_func(callable_id, None)
    assert run.returncode == 0, run.stderr
    np.testing.assert_allclose(np.load(tmp_path / "out.npz")["w@GRAD"], PADDLE["w@GRAD"], rtol=1e-12, atol=1e-12)


def test_a_py_func_whose_function_is_not_registered_is_refused_in_one_line(files):
    run = gradc_cli("run", files / "py_func_paddle.pb", "--feed", files / "feed.npz", "--fetch", "x@GRAD")
    assert run.returncode == 1
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr
    assert "block 0, op 1 (py_func): Python function 0, of the process that built the program, is not registered" \
        in run.stderr and "gradc.register_py_func(0, fn)" in run.stderr


def test_a_function_returning_too_few_values_is_named(files, registered):
    """A Python function returning one value for the two vars of Out is an error naming the op and the function."""
    register_py_func(2, lambda a, b, c: a * b * c)
    run = gradc_cli("run", files / "py_func_paddle.pb", "--feed", files / "feed.npz", "--fetch", "x@GRAD")
    assert run.returncode == 1 and run.stderr.count("\n") == 1
    assert "op 2 (py_func)" in run.stderr and "Python function 2 returned 1 value(s) for the 2 var(s)" in run.stderr


def test_a_py_func_without_backward_on_the_loss_path_is_refused(files, tmp_path):
    """Paddle's backward writes no grad before a py_func given no backward_func (gradients() returns none): gradc
    refuses to compile such a program rather than give zeros, naming the op."""
    program = gradc.load(files / "py_func.pb")
    program.global_block.ops[1].set_attr("backward_callable_id", -1)
    gradc.save(program, tmp_path / "no_backward.pb")
    compiled = gradc_cli("compile", tmp_path / "no_backward.pb", "-o", tmp_path / "out.pb", "--wrt", "x")
    assert compiled.returncode == 1 and compiled.stderr.count("\n") == 1
    assert "op 1 (py_func)" in compiled.stderr and "no backward function" in compiled.stderr
    assert not (tmp_path / "out.pb").exists()


@pytest.mark.parametrize("kind, path", [("save", "model/linear_1.w_0"), ("save_combine", "model/model.pdiparams"),
                                        ("load", "model/linear_1.w_0"), ("load_combine", "model/model.pdiparams")])
def test_paddles_save_and_load_programs_are_refused_naming_the_file(files, tmp_path, monkeypatch, kind, path):
    """Before, each was refused as an op type gradc does not know; now in one line that names the file and says what
    gradc does instead (--params reads what load ops would; gradc.save_params writes what save ops would)."""
    monkeypatch.chdir(tmp_path)
    params = {"linear_1.w_0": np.ones((3, 2), np.float32), "linear_1.b_0": np.zeros(2, np.float32)}
    np.savez(tmp_path / "params.npz", **params)
    run = gradc_cli("run", files / f"{kind}.pb", *(["--params", "params.npz"] if kind.startswith("save") else []))
    assert run.returncode == 1 and run.stderr.count("\n") == 1 and "Traceback" not in run.stderr
    verb = "reads" if kind.startswith("load") else "writes"
    assert f"block 0, op 0 ({kind}) {verb} the file '{path}'" in run.stderr
    assert ("--params" if kind.startswith("load") else "gradc.save_params") in run.stderr
    assert not (tmp_path / "model").exists()


def test_a_jpeg_read_and_decoded_in_the_program_is_refused_and_the_cut_it_names_runs(files, tmp_path):
    """read_file then decode_jpeg (paddle.vision.ops) ahead of a linear layer: gradc compiles the program (the bytes
    and pixels are uint8: no gradient), refuses to run read_file naming the file, and the program gradc export cuts
    at decode_jpeg's output, as the refusal of decode_jpeg says, runs on fed pixels."""
    program = files / "vision_read.pb"
    assert gradc_cli("compile", program, "-o", tmp_path / "train.pb").returncode == 0
    w, b = np.linspace(-1, 1, 96, dtype=np.float32).reshape(48, 2), np.array([0.5, -0.5], np.float32)
    np.savez(tmp_path / "params.npz", **{"linear_0.w_0": w, "linear_0.b_0": b})
    run = gradc_cli("run", program, "--params", tmp_path / "params.npz")
    assert run.returncode == 1 and run.stderr.count("\n") == 1
    assert "block 0, op 0 (read_file) reads the file 'photo.jpg'" in run.stderr
    decode = gradc.load(program)
    decode.global_block.ops.pop(0)   # the decode_jpeg op's own refusal: its pixels fed past a read_file
    gradc.save(decode, tmp_path / "decode.pb")
    pixels = np.arange(3 * 4 * 4, dtype=np.uint8).reshape(3, 4, 4) * 5
    np.savez(tmp_path / "bytes.npz", **{"read_file_0.tmp_0": np.arange(16, dtype=np.uint8)})
    refused = gradc_cli("run", tmp_path / "decode.pb", "--params", tmp_path / "params.npz", "--feed",
                        tmp_path / "bytes.npz")
    assert refused.returncode == 1 and "op 0 (decode_jpeg): decoding JPEG runs on GPU only" in refused.stderr
    assert "gradc export --input decode_jpeg_0.tmp_0" in refused.stderr
    assert gradc_cli("export", program, "--input", "decode_jpeg_0.tmp_0", "--fetch", "linear_0.tmp_1", "--params",
                     tmp_path / "params.npz", "-o", tmp_path / "cut").returncode == 0
    np.savez(tmp_path / "pixels.npz", **{"decode_jpeg_0.tmp_0": pixels})
    cut = gradc_cli("run", tmp_path / "cut.pdmodel", "--params", tmp_path / "cut.pdiparams", "--feed",
                    tmp_path / "pixels.npz", "--fetch", "linear_0.tmp_1", "-o", tmp_path / "out.npz")
    assert cut.returncode == 0, cut.stderr
    expected = (pixels.astype(np.float32).reshape(1, -1) / np.float32(255))[:, :48] @ w + b
    np.testing.assert_allclose(np.load(tmp_path / "out.npz")["linear_0.tmp_1"], expected, rtol=1e-6)


def test_paddles_pir_reader_converts_and_is_refused_like_the_legacy_one(files, tmp_path):
    """pd_op.read_file and pd_op.decode_jpeg (before: ops gradc's PIR table had no row for) become the legacy ops
    with Paddle's attributes; running the PIR program refuses read_file in the same one line."""
    program = files / "pir" / "vision_read.json"
    assert gradc_cli("convert", program, tmp_path / "vision_read.pb").returncode == 0
    ops = gradc.load(tmp_path / "vision_read.pb").global_block.ops
    read, decode = (next(op for op in ops if op.type == kind) for kind in ("read_file", "decode_jpeg"))
    assert read.attrs["filename"] == "photo.jpg" and decode.attrs["mode"] == "rgb"
    assert decode.input("X") == read.output("Out")
    np.savez(tmp_path / "x.npz", x=np.ones(2, np.float32))
    run = gradc_cli("run", program, "--feed", tmp_path / "x.npz")
    assert run.returncode == 1 and run.stderr.count("\n") == 1
    assert "(read_file) reads the file 'photo.jpg': gradc runs no op that reads or writes a file" in run.stderr


READER = np.load(OPS / "reader.npz")


def test_paddles_reader_program_trains_on_fed_batches_to_paddles_numbers(files):
    """create_py_reader reads a queue Paddle keeps in its scope (undeclared in the program), and read takes each
    batch from it: gradc runs the program (before: unknown ops, and a var no block declares) with the batches fed,
    two SGD steps from Paddle's initial parameters giving Paddle's losses and parameters."""
    scope, executor = gradc.Scope(), gradc.Executor()
    executor.run(gradc.load(files / "reader_startup.pb"), scope=scope)
    params = [str(name) for name in READER["params"]]
    for name in params:
        scope.assign(name, READER[name].copy())
    train = gradc.load(files / "reader_train.pb")
    losses = [executor.run(train, feed={"x": READER[f"x{step}"], "y": READER[f"y{step}"]},
                           fetch_list=["mean_0.tmp_0"], scope=scope)[0] for step in range(2)]
    np.testing.assert_allclose(losses, READER["losses"], rtol=1e-6)
    for name in params:
        np.testing.assert_allclose(scope.find(name), READER[f"{name}@after"], rtol=1e-6, atol=1e-7, err_msg=name)


def test_a_reader_batch_not_fed_is_named_in_one_line(files, tmp_path):
    np.savez(tmp_path / "x_only.npz", x=READER["x0"])
    run = gradc_cli("run", files / "reader_train.pb", "--startup", files / "reader_startup.pb", "--feed",
                    tmp_path / "x_only.npz", "--fetch", "mean_0.tmp_0")
    assert run.returncode == 1 and run.stderr.count("\n") == 1
    assert "block 0, op 2 (read)" in run.stderr and "lacks y: feed x, y" in run.stderr


DATA_OP = np.load(OPS / "data.npz")
DATA_GRADS = ("linear_0.w_0@GRAD", "linear_0.b_0@GRAD", "linear_1.w_0@GRAD", "linear_1.b_0@GRAD")


def _data_op_params(tmp_path):
    np.savez(tmp_path / "params.npz", **{grad.removesuffix("@GRAD"): DATA_OP[grad.removesuffix("@GRAD")]
                                         for grad in DATA_GRADS})
    return tmp_path / "params.npz"


def _data_op_run(tmp_path, program) -> dict:
    np.savez(tmp_path / "x.npz", x=DATA_OP["x"])
    fetches = [arg for grad in DATA_GRADS for arg in ("--fetch", grad)]
    run = gradc_cli("run", program, "--feed", tmp_path / "x.npz", "--params", _data_op_params(tmp_path), "--fetch",
                    "mean_0.tmp_0=loss", *fetches, "-o", tmp_path / "out.npz")
    assert run.returncode == 0, run.stderr
    return np.load(tmp_path / "out.npz")


@pytest.mark.parametrize("whose", ["paddle", "gradc"])
def test_a_program_with_paddles_data_op_trains_to_paddles_gradients(files, tmp_path, whose):
    """Before, its data op was unknown and every run refused. Paddle's program (after its append_backward) run by
    gradc, and gradc's compilation of the forward, give the loss and parameter gradients Paddle's (PIR) executor
    computed, in float64."""
    program = files / "data_paddle.pb"
    if whose == "gradc":
        program = tmp_path / "train.pb"
        assert gradc_cli("compile", files / "data.pb", "-o", program).returncode == 0
    ours = _data_op_run(tmp_path, program)
    np.testing.assert_allclose(ours["loss"], DATA_OP["loss"], rtol=1e-12)
    for grad in DATA_GRADS:
        np.testing.assert_allclose(ours[grad], DATA_OP[grad], rtol=1e-12, atol=1e-14, err_msg=grad)


def test_a_data_op_whose_var_is_not_fed_is_named(files, tmp_path):
    run = gradc_cli("run", files / "data.pb", "--params", _data_op_params(tmp_path), "--fetch", "mean_0.tmp_0")
    assert run.returncode == 1 and run.stderr.count("\n") == 1
    assert "block 0, op 0 (data) stands for the program's input 'x', which is not fed" in run.stderr


def test_a_data_ops_shape_tensor_checks_the_fed_value():
    """A data op's ShapeTensor stands for its shape attribute: a fed value of another shape is refused in one line
    naming the op and the input; -1 takes any size."""
    program = gradc.Program()
    block = program.global_block
    block.create_var("dims", [2], gradc.VarType.INT64)
    block.create_var("x", [-1, -1], gradc.VarType.FP64)   # the declaration leaves the shape to the tensor
    block.append_op("data", {"ShapeTensor": ["dims"]}, {"out": ["x"]}, {"shape": [5, 5], "dtype": 6})
    value = np.ones((4, 3))
    dims = {"dims": np.array([-1, 3], np.int64)}
    np.testing.assert_array_equal(gradc.Executor().run(program, {**dims, "x": value}, ["x"])[0], value)
    with pytest.raises(gradc.GradcError, match=r"op 0 \(data\).*'x' is fed with shape \[4, 2\]; its shape tensor "
                       r"gives \[-1, 3\]"):
        gradc.Executor().run(program, {**dims, "x": np.ones((4, 2))}, ["x"])


def test_a_program_with_a_data_op_written_as_pir_names_its_input(files, tmp_path):
    """gradc's PIR export makes the data op PIR's own pd_op.data of the fed var (before: no export for data), and
    the PIR program gives Paddle's loss."""
    assert gradc_cli("convert", files / "data.pb", tmp_path / "data.json").returncode == 0
    np.savez(tmp_path / "x.npz", x=DATA_OP["x"])
    run = gradc_cli("run", tmp_path / "data.json", "--feed", tmp_path / "x.npz", "--params", _data_op_params(tmp_path),
                    "--fetch", "reduce_mean_0.tmp_0=loss", "-o", tmp_path / "out.npz")
    assert run.returncode == 0, run.stderr
    np.testing.assert_allclose(np.load(tmp_path / "out.npz")["loss"], DATA_OP["loss"], rtol=1e-12)
