"""Bad optimizer ops give one clear line naming block, op index, op type and the var or attribute, and exit
code 1: at `gradc compile` (shape inference in the verify pass) and at `gradc run` (the kernels check the
arrays they are given), never a numpy traceback. Also bad optimizer options of `gradc compile`."""

import re
import sys

import numpy as np
import pytest

import gradc
from gradc.cli import main
from gradc.executor.kernels import optimizer as optimizer_kernels
from gradc.ir import VarType
from gradc.ops.optimizer_checks import check_update
from gradc.optimizers import SGD, ParamAttr
from optim_cases import OptimCase

F32 = VarType.FP32
ADAM = {"Moment1": "m1", "Moment2": "m2", "Beta1Pow": "b1", "Beta2Pow": "b2"}


def cli(capsys, monkeypatch, *args) -> tuple[int, str]:
    """Run `gradc ARGS` in this process: (exit code, stderr)."""
    monkeypatch.setattr(sys, "argv", ["gradc", *map(str, args)])
    code = 0
    try:
        main()
    except SystemExit as exc:
        code = exc.code
    return code, capsys.readouterr().err


def assert_one_line(code, err, *phrases):
    assert code == 1 and "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gradc: error: "), err
    for phrase in phrases:
        assert phrase in lines[0], lines[0]


def update_program(path, op_type, accumulators: dict, attrs=None, shapes=None, lr="lr", extra=None):
    """Param w [2, 3] and its gradient, then one optimizer op (op 1, after a scale writing w@GRAD)."""
    shapes = {"w": [2, 3], "w@GRAD": [2, 3], "lr": [], "b1": [1], "b2": [1], "eps": [1], **(shapes or {})}
    program = gradc.Program()
    block = program.global_block
    for name in ["w", "w@GRAD", "lr", *accumulators.values(), *(extra or {}).values()]:
        block.create_var(name, shapes.get(name, [2, 3]), F32, persistable=name != "w@GRAD")
    block.append_op("scale", {"X": ["w"]}, {"Out": ["w@GRAD"]}, {"scale": 0.5})
    inputs = {"Param": ["w"], "Grad": ["w@GRAD"], "LearningRate": [lr] if lr else [],
              **{slot: [v] for slot, v in {**accumulators, **(extra or {})}.items()}}
    outputs = {"ParamOut": ["w"], **{slot + "Out": [v] for slot, v in accumulators.items()}}
    block.append_op(op_type, inputs, outputs, attrs or {})
    gradc.save(program, path)
    return program


def values(program, **overrides):
    arrays = {name: np.full([max(d, 1) for d in var.shape] if var.shape else [], 0.5, np.float32)
              for name, var in program.global_block.vars.items() if var.persistable}
    return {**arrays, **overrides}


CASES = {
    "accumulator shape": ("adam", ADAM, {}, {"m1": [2, 4]}, None,
                          "Moment1 'm1' has shape [2, 4], but parameter 'w' has shape [2, 3]"),
    "list accumulator shape": ("lars_momentum", {"Velocity": "v"}, {}, {"v": [3, 2]}, None,
                               "Velocity 'v' has shape [3, 2], but parameter 'w' has shape [2, 3]"),
    "no learning rate": ("sgd", {}, {}, {}, "", "the required input slot 'LearningRate' is empty"),
    "learning rate not a scalar": ("momentum", {"Velocity": "v"}, {}, {"lr": [2]}, None,
                                   "LearningRate 'lr' has shape [2], but it must hold one value"),
    "negative epsilon": ("adagrad", {"Moment": "m"}, {"epsilon": -1e-6}, {}, None,
                         "attribute epsilon is -1e-06, but it must be >= 0"),
    "beta1 of 1": ("adam", ADAM, {"beta1": 1.0}, {}, None, "attribute beta1 is 1, but it must be in [0, 1)"),
    "negative beta2": ("lamb", ADAM, {"beta2": -0.5}, {}, None,
                       "attribute beta2 is -0.5, but it must be in [0, 1)"),
    "amsgrad without Moment2Max": ("adam", ADAM, {"amsgrad": True}, {}, None,
                                   "attribute amsgrad is set, but input Moment2Max is empty"),
    "unknown regularization": ("momentum", {"Velocity": "v"}, {"regularization_method": "l3"}, {}, None,
                               "attribute regularization_method is 'l3'"),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("command", ["compile", "run"])
def test_a_bad_optimizer_op_is_one_clear_error(case, command, tmp_path, capsys, monkeypatch):
    op_type, accumulators, attrs, shapes, lr, phrase = CASES[case]
    path = tmp_path / "p.pb"
    program = update_program(path, op_type, accumulators, attrs, shapes, "lr" if lr is None else lr)
    if command == "compile":
        code, err = cli(capsys, monkeypatch, "compile", path, "-o", tmp_path / "o.pb", "--loss", "w@GRAD")
    else:
        np.savez(tmp_path / "params.npz", **values(program))
        code, err = cli(capsys, monkeypatch, "run", path, "--params", tmp_path / "params.npz", "--fetch", "w")
    assert_one_line(code, err, f"block 0, op 1 ({op_type})", phrase)


@pytest.mark.parametrize("tensor, value, phrase", [
    ("Beta1Tensor", 1.5, "Beta1Tensor 'eps' is 1.5, but it must be in [0, 1)"),
    ("EpsilonTensor", -1.0, "EpsilonTensor 'eps' is -1, but it must be >= 0"),
])
def test_a_bad_hyper_parameter_tensor_is_caught_at_run_time(tensor, value, phrase, tmp_path, capsys, monkeypatch):
    path = tmp_path / "p.pb"
    program = update_program(path, "adam", ADAM, extra={tensor: "eps"})
    np.savez(tmp_path / "params.npz", **values(program, eps=np.array([value], np.float32)))
    code, err = cli(capsys, monkeypatch, "run", path, "--params", tmp_path / "params.npz", "--fetch", "w")
    assert_one_line(code, err, "block 0, op 1 (adam)", phrase)


def test_a_learning_rate_without_a_value(tmp_path, capsys, monkeypatch):
    path = tmp_path / "p.pb"
    program = update_program(path, "sgd", {})
    np.savez(tmp_path / "params.npz", **{k: v for k, v in values(program).items() if k != "lr"})
    code, err = cli(capsys, monkeypatch, "run", path, "--params", tmp_path / "params.npz", "--fetch", "w")
    assert_one_line(code, err, "no value for the persistable var(s) lr: not in params", "give them with --params")


@pytest.mark.parametrize("options, phrase", [
    (["--optimizer", "adam", "--opt", "beta1=1.5"], "Adam: beta1 is 1.5, but it must be in [0.0, 1.0)"),
    (["--optimizer", "adagrad", "--opt", "epsilon=-1"], "Adagrad: epsilon is -1, but it must be >= 0.0"),
    (["--optimizer", "sgd", "--clip-norm", "1", "--clip-value", "1"], "give one of --clip-global-norm"),
    (["--optimizer", "lamb", "--l2", "0.1"], "lamb has no --l1/--l2 weight decay; its own decay is --opt"),
    (["--clip-global-norm", "1"], "--clip-global-norm: only with --optimizer"),
    (["--optimizer", "sgd", "--opt", "nesterov"], "--opt takes KEY=VALUE"),
    (["--optimizer", "rprop", "--lr", "100"], "Rprop: needs 0 < learning_rate_range[0] <= learning_rate"),
])
def test_bad_optimizer_options(options, phrase, tmp_path, capsys, monkeypatch):
    path = tmp_path / "p.pb"
    update_program(path, "sgd", {})
    code, err = cli(capsys, monkeypatch, "compile", path, "-o", tmp_path / "o.pb", *options)
    assert_one_line(code, err, phrase)
    assert not (tmp_path / "o.pb").exists()



def test_param_attrs_for_a_parameter_the_program_does_not_train():
    case = OptimCase("mlp_sgd")
    program = case.forward()
    with pytest.raises(gradc.GradcError, match="param_attrs name linear_9.w_0, which the program does not train"):
        SGD(0.1).minimize(program, case.meta["loss"], param_attrs={"linear_9.w_0": ParamAttr(learning_rate=0.5)})


@pytest.mark.parametrize("change, phrase", [
    ("shape", "Moment1 'm1' has shape [2, 4], but parameter 'w' has shape [2, 3]"),
    ("attribute", "attribute beta1 is 1, but it must be in [0, 1)"),
    ("tensor", "Beta1Tensor 'eps' is 1.5, but it must be in [0, 1)"),
])
def test_the_checks_run_again_when_what_they_read_changes(change, phrase, tmp_path, monkeypatch):
    """A training loop's optimizer kernels check their op once, not at every step, until a shape, an attribute or a
    fed hyper-parameter changes; then they check it again."""
    calls = []

    def counted(*args):
        calls.append(args)
        return check_update(*args)
    monkeypatch.setattr(optimizer_kernels, "check_update", counted)
    tensor = {"Beta1Tensor": "eps"} if change == "tensor" else {}
    program = update_program(tmp_path / "p.pb", "adam", ADAM, extra=tensor)
    scope = gradc.Scope()
    for name, value in values(program, eps=np.array([0.9], np.float32)).items():
        scope[name] = value
    executor = gradc.Executor()
    for _ in range(3):
        executor.run(program, fetch_list=["w"], scope=scope)
    assert len(calls) == 1
    adam = program.global_block.ops[1]
    if change == "shape":
        scope["m1"] = np.zeros([2, 4], np.float32)
    elif change == "attribute":
        adam.attrs["beta1"] = 1.0
    else:
        scope["eps"] = np.array([1.5], np.float32)
    with pytest.raises(gradc.ExecutionError, match=re.escape(phrase)):
        executor.run(program, fetch_list=["w"], scope=scope)
    assert len(calls) == 2
