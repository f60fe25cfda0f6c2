"""Master weights (multi_precision=True) in gradc's optimizer API. Structure: for every optimizer Paddle gives the
option, gradc writes what Paddle's minimize wrote on a model with a float16 and a float32 layer
(tests/data/paddle/master_weights, tools/paddle_master_weight_fixtures.py): the same optimize ops, slots,
attributes, float32 master and accumulator vars, and startup ops (fill_constant, then cast from the parameter).
Numbers (Paddle's CPU has no float16 optimizer kernels): the float32 master follows float32 math against numpy,
the float16 parameter is the master's cast, and without master weights the float16 parameter ends elsewhere."""

import json
from pathlib import Path

import numpy as np
import pytest

import gradc
from gradc import optimizers
from gradc.optimizers.cli_options import build_optimizer
from test_optimizer_pass_vs_paddle import Matcher, _normal, optimize_ops

DATA = Path(__file__).parent / "data" / "paddle" / "master_weights"
CASES = sorted(p.name for p in DATA.iterdir() if (p / "meta.json").is_file())
NAMES = {"LarsMomentumOptimizer": "lars_momentum"}
LOSS = "mean_0.tmp_0"
MASTERS = {"linear_0.w_0": "linear_0.w_0_fp32_master_0", "linear_0.b_0": "linear_0.b_0_fp32_master_0"}


def meta(case: str) -> dict:
    return json.loads((DATA / case / "meta.json").read_text())


def gradc_optimizer(case: str) -> optimizers.Optimizer:
    """The case's Paddle optimizer and arguments, as gradc.optimizers."""
    arguments = dict(meta(case)["hyperparameters"])
    name = NAMES.get(meta(case)["optimizer"], meta(case)["optimizer"].lower())
    if arguments.pop("use_multi_tensor", False):
        name = "merged_" + name
    return optimizers.make_optimizer(name, **arguments)


def startup_ops(startup: gradc.Program, skip: set[str]) -> list:
    """Each startup op that writes a persistable other than a model parameter, with that var's description."""
    rows = []
    for op in startup.global_block.ops:
        target = op.output("Out")[0]
        var = startup.global_block.var(target)
        if target in skip or not var.persistable:
            continue
        attrs = {name: _normal(op.attrs.get(name)) for name in ("shape", "dtype", "value", "str_value", "in_dtype",
                                                               "out_dtype", "op_role")}
        rows.append((op.type, op.input("X") if op.type == "cast" else [], target, var.shape, var.dtype,
                     bool(var.persistable), attrs))
    return rows


@pytest.mark.parametrize("case", CASES)
def test_master_weights_are_written_as_paddle_writes_them(case):
    program = gradc.load(DATA / meta(case)["forward"])
    startup = gradc_optimizer(case).minimize(program, LOSS)
    theirs = gradc.load(DATA / case / "train.pb")
    ours_ops, their_ops = optimize_ops(program), optimize_ops(theirs)
    assert [op.type for op in ours_ops] == [op.type for op in their_ops]
    matcher = Matcher(program, theirs)
    for index, (a, b) in enumerate(zip(ours_ops, their_ops)):
        matcher.op(a, b, f"{case}: optimize op {index}")
    for param, master in MASTERS.items():
        assert matcher.pairs.get(master) == master, f"{case}: {param} has no master weight"
    params = {name for name, var in theirs.global_block.vars.items() if var.is_parameter}
    assert startup_ops(startup, params) == startup_ops(gradc.load(DATA / case / "startup.pb"), params)


def test_the_cli_optimizer_spec_takes_multi_precision():
    """gradc compile --optimizer adam --opt multi_precision=True writes the master weights too."""
    optimizer = build_optimizer("adam", 0.01, None, ["multi_precision=True"], None, None, None, None, None)
    program = gradc.load(DATA / "models" / "mixed.pb")
    optimizer.minimize(program, LOSS)
    adam = [op for op in program.global_block.ops if op.type == "adam"]
    assert [op.input("MasterParam") for op in adam] == [[MASTERS["linear_0.b_0"]], [MASTERS["linear_0.w_0"]], [], []]
    assert [op.attrs["multi_precision"] for op in adam] == [True, True, False, False]


# ---------------------------------------------------------------- numbers
def _steps(optimizer: optimizers.Optimizer, steps: int = 4) -> tuple[list[dict], list[dict]]:
    """Train the mixed model ``steps`` steps from fixed parameters; -> the state after each step and the
    gradients each step used."""
    program = gradc.load(DATA / "models" / "mixed.pb")
    startup = optimizer.minimize(program, LOSS)
    rng = np.random.default_rng(7)
    scope = gradc.Scope()
    for name, var in program.global_block.vars.items():
        if var.is_parameter:
            dtype = np.float16 if var.dtype == gradc.VarType.FP16 else np.float32
            scope[name] = (rng.standard_normal(var.shape) * 0.5).astype(dtype)
    executor = gradc.Executor()
    executor.run(startup, scope=scope)
    watched = [*MASTERS, *MASTERS.values()]
    states, grads = [{name: np.array(scope[name]) for name in watched if name in scope}], []
    for _ in range(steps):
        feed = {"x": rng.standard_normal((4, 3)).astype(np.float16)}
        fetched = executor.run(program, feed=feed, fetch_list=[p + "@GRAD" for p in MASTERS], scope=scope)
        grads.append(dict(zip(MASTERS, fetched)))
        states.append({name: np.array(scope[name]) for name in watched if name in scope})
    return states, grads


def _adam(master, grad, state, lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8):
    """numpy Adam in float32 as the kernels group it (bias corrections folded into lr and eps)."""
    m1, m2, t = state.get("m1", 0.0), state.get("m2", 0.0), state.get("t", 0) + 1
    m1 = np.float32(beta1) * m1 + np.float32(1 - beta1) * grad
    m2 = np.float32(beta2) * m2 + np.float32(1 - beta2) * grad * grad
    b1, b2 = np.float32(beta1) ** t, np.float32(beta2) ** t
    lr_t = np.float32(lr) * np.sqrt(1 - b2) / (1 - b1)
    state.update(m1=m1, m2=m2, t=t)
    return master - lr_t * m1 / (np.sqrt(m2) + np.float32(eps) * np.sqrt(1 - b2))


def _momentum(master, grad, state, lr=0.1, mu=0.9):
    state["v"] = np.float32(mu) * state.get("v", 0.0) + grad
    return master - np.float32(lr) * state["v"]


def _sgd(master, grad, state, lr=1e-3):
    return master - np.float32(lr) * grad


RULES = {"sgd": (optimizers.SGD(1e-3, multi_precision=True), _sgd),
         "momentum": (optimizers.Momentum(0.1, multi_precision=True), _momentum),
         "adam": (optimizers.Adam(0.01, multi_precision=True), _adam)}


@pytest.mark.parametrize("name", RULES)
def test_a_master_weight_step_is_float32_math_and_the_parameter_its_cast(name):
    optimizer, rule = RULES[name]
    states, grads = _steps(optimizer)
    for param, master in MASTERS.items():
        np.testing.assert_array_equal(states[0][master], states[0][param].astype(np.float32))   # the startup cast
        expected, memory = states[0][master], {}
        for step in range(1, len(states)):
            expected = rule(expected, grads[step - 1][param].astype(np.float32), memory)
            assert states[step][master].dtype == np.float32 and states[step][param].dtype == np.float16
            np.testing.assert_allclose(states[step][master], expected, rtol=2e-6, atol=1e-7,
                                       err_msg=f"{name} step {step}: {master}")
            np.testing.assert_array_equal(states[step][param], states[step][master].astype(np.float16))


def test_without_master_weights_the_float16_update_loses_the_small_steps():
    """SGD at lr 1e-3: steps below float16's resolution vanish without a master and add up with one."""
    with_master, _ = _steps(optimizers.SGD(1e-3, multi_precision=True))
    without, _ = _steps(optimizers.SGD(1e-3))
    assert "linear_0.w_0_fp32_master_0" not in without[-1]
    assert not np.array_equal(with_master[-1]["linear_0.w_0"], without[-1]["linear_0.w_0"])


def test_a_multi_precision_that_is_not_a_bool_is_one_clear_error():
    with pytest.raises(gradc.GradcError, match="Adam: multi_precision must be True or False, not 'maybe'"):
        build_optimizer("adam", 0.01, None, ["multi_precision=maybe"], None, None, None, None, None)


@pytest.mark.parametrize("case", CASES)
def test_every_optimizer_with_master_weights_trains_them(case):
    """Paddle's program structure of each case, run in gradc: the masters move, the float16 parameters are their
    casts, and every accumulator keeps the dtype the program declares (the executor checks it)."""
    states, _ = _steps(gradc_optimizer(case), 3)
    for param, master in MASTERS.items():
        assert not np.array_equal(states[-1][master], states[0][master]), f"{case}: {master} did not move"
        np.testing.assert_array_equal(states[-1][param], states[-1][master].astype(np.float16), err_msg=case)
