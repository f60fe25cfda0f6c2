"""A scientific-ML researcher's week (docs/tools.md): PINNs u(x, t) built by Paddle 3.3.1 in legacy static mode
(tools/paddle_user_week12.py): Burgers with tanh and Poisson in 2-D with sin, their residuals written by
`paddle.static.gradients`, so the loss program holds grad and grad-of-grad ops already; the nets alone for gradc's
own derivatives (the heat equation with silu). Each fault found, as the behaviour it has now."""

import json

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA
from gradc.gradcheck import compare_program

WEEK = DATA / "user_week12"
META = json.loads((WEEK / "meta.json").read_text())


def _feed(case: str) -> dict:
    with np.load(WEEK / case / "feed.npz") as feed:
        return dict(feed)


def test_compile_optimizer_updates_with_the_losss_gradient_not_the_residuals_first_backward(tmp_path):
    """Before, `gradc compile pde.pb --optimizer adam` listed `w@GRAD@2` as each gradient but its adam ops read
    `w@GRAD`, what `static.gradients(u, x)` had written (64 at the last bias, the loss's gradient is 1.06): the loss
    rose from step 2 (13.1 after 40 steps where Paddle's falls to 1.68)."""
    train = tmp_path / "train.pb"
    assert gradc_cli("compile", WEEK / "burgers" / "pde.pb", "-o", train, "--optimizer", "adam",
                     "--lr", "0.001").returncode == 0
    program = gradc.load(train)
    assert {op.inputs["Grad"][0] for op in program.global_block.ops if op.type == "adam"} == {
        f"{param}@GRAD@2" for param in META["burgers"]["params"]}
    scope, executor = gradc.Scope(), gradc.Executor()
    executor.run(gradc.load(tmp_path / "train.startup.pb"), scope=scope)
    gradc.load_params(scope, WEEK / "burgers" / "params.npz", program)
    losses = [float(executor.run(program, _feed("burgers"), [META["burgers"]["loss"]], scope)[0]) for _ in range(40)]
    np.testing.assert_allclose(losses, np.load(WEEK / "burgers" / "paddle.npz")["losses"], rtol=1e-6)


def test_logged_gradient_norms_are_the_losss(tmp_path):
    """Before, `gradc train --log-grad-norms` of that program logged the norms of `w@GRAD` (the last bias's 64, the
    total 159.4) where the loss's gradients are `w@GRAD@2` (1.058, 3.677)."""
    train = tmp_path / "train.pb"
    gradc_cli("compile", WEEK / "burgers" / "pde.pb", "-o", train, "--optimizer", "adam", "--lr", "0.001")
    done = gradc_cli("train", train, "--startup", tmp_path / "train.startup.pb", "--params",
                     WEEK / "burgers" / "params.npz", "--feed", WEEK / "burgers" / "feed.npz", "--steps", "1",
                     "--log-grad-norms")
    assert done.returncode == 0, done.stderr
    assert "grad norms: total 3.677" in done.stdout + done.stderr and "linear_2.b_0 1.058" in done.stdout + done.stderr


def test_legacy_sin_double_grad_of_a_laplacian_runs_to_paddles_loss_and_differentiates():
    """Before, Paddle's own Poisson program (`static.gradients` twice through sin) was refused: 'sin_double_grad' had
    no definition (nor cos_double_grad, square_grad_grad, log_grad_grad). Now its loss is Paddle's, its parameter
    gradient (third derivatives through the new op's maker) that of float64 central differences."""
    program, feed = gradc.load(WEEK / "poisson" / "pde.pb"), _feed("poisson")
    params = dict(np.load(WEEK / "poisson" / "params.npz"))
    scope = gradc.Scope()
    gradc.load_params(scope, WEEK / "poisson" / "params.npz", program)
    loss, = gradc.Executor().run(program, feed, [META["poisson"]["loss"]], scope)
    np.testing.assert_allclose(loss, np.load(WEEK / "poisson" / "paddle.npz")["losses"][0], rtol=1e-6)
    _, checks = compare_program(program, feed, META["poisson"]["params"], META["poisson"]["loss"], params,
                                float64=True, directions=3)
    assert [check.var for check in checks if check.mismatch is not None] == []


def test_gradients_of_a_saved_nets_input_name_the_stop_gradient_var_in_the_way():
    """Before, clearing the input's flag as the warning said (`block.var("x").stop_gradient = False`) left du/dx None
    with no word: Paddle saved the concat of x and t stop_gradient too (Paddle's own `static.gradients` gives None
    there as well). Now the warning names that var; cleared too, du/dx and du/dt are there."""
    program = gradc.load(WEEK / "burgers" / "net.pb")
    for name in ("x", "t"):
        program.global_block.var(name).stop_gradient = False
    with pytest.warns(gradc.GradcWarning, match=r"no gradient of x \(through 'concat_0.tmp_0'\), t \(through"):
        assert gradc.gradients(program.clone(), META["burgers"]["net_out"], ["x", "t"]) == [None, None]
    program.global_block.var("concat_0.tmp_0").stop_gradient = False
    assert gradc.gradients(program, META["burgers"]["net_out"], ["x", "t"]) == ["x@GRAD", "t@GRAD"]


def test_compile_optimizer_leaves_a_parameter_the_loss_does_not_reach_alone(tmp_path):
    """Before, with the residual alone as the loss (u_xx + u_yy + f does not depend on the last bias), compile warned
    that linear_2.b_0 gets no gradient and will not train, and then wrote an adam op stepping it with
    `linear_2.b_0@GRAD`, the sum of du/db that `static.gradients(u, x)` had written."""
    train = tmp_path / "train.pb"
    done = gradc_cli("compile", WEEK / "poisson" / "pde.pb", "-o", train, "--loss", "mean_0.tmp_0",
                     "--optimizer", "adam")
    assert done.returncode == 0 and "1 (linear_2.b_0): the loss does not depend on it" in done.stderr
    updated = {op.inputs["Param"][0]: op.inputs["Grad"][0] for op in gradc.load(train).global_block.ops
               if op.type == "adam"}
    assert updated == {param: f"{param}@GRAD@2" for param in META["poisson"]["params"] if param != "linear_2.b_0"}


def _burgers_net_and_derivatives():
    """Paddle's Burgers net with u_x, u_t and u_xx appended by gradients() (its inputs made differentiable)."""
    program = gradc.load(WEEK / "burgers" / "net.pb")
    for name in ("x", "t", "concat_0.tmp_0"):
        program.global_block.var(name).stop_gradient = False
    u = META["burgers"]["net_out"]
    with pytest.warns(gradc.GradcWarning, match="one value per example"):
        u_x, u_t = gradc.gradients(program, u, ["x", "t"])
        u_xx, = gradc.gradients(program, u_x, ["x"])
    return program, u, u_x, u_t, u_xx


def test_export_keeps_the_backward_ops_a_fetched_derivative_needs(tmp_path):
    """Before, exporting u with du/dx and d2u/dx2 (a PINN's fields) was refused: 'the fetches need x@GRAD, which is
    neither fed nor computed from the feeds' (the backward ops were dropped first), where Paddle's
    save_inference_model keeps them; and a PIR export of such a model fetched every parameter's gradient too."""
    program, u, u_x, u_t, u_xx = _burgers_net_and_derivatives()
    params, grid = dict(np.load(WEEK / "burgers" / "params.npz")), {k: v[:8] for k, v in _feed("burgers").items()
                                                                        if k in ("x", "t")}
    scope = gradc.Scope()
    gradc.load_params(scope, WEEK / "burgers" / "params.npz", program)
    fields = [u, u_x, u_t, u_xx]
    expected = gradc.Executor().run(program, grid, fields, scope)
    for fmt in ("pb", "pir"):
        model_path, params_path = gradc.export(program, tmp_path / fmt, feeds=["x", "t"], fetches=fields,
                                               values=params, format=fmt)
        model = gradc.load(model_path)
        assert [op.input("X")[0] for op in model.global_block.ops if op.type == "fetch"] == fields
        assert "tanh_grad" in {op.type for op in model.global_block.ops}
        loaded = gradc.Scope()
        gradc.load_params(loaded, params_path, model)
        for got, want in zip(gradc.Executor().run(model, grid, None, loaded), expected):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_paddles_own_burgers_training_program_runs_to_paddles_losses():
    """Before, Paddle's training program of the Burgers loss (its backward of u_t + u u_x - nu u_xx) did not run:
    'no kernel for matmul_v2_triple_grad, elementwise_add_triple_grad'. Now its 40 Adam steps give Paddle's losses,
    and u after them Paddle's."""
    program = gradc.load(WEEK / "burgers" / "train.pb")
    assert {"matmul_v2_triple_grad", "elementwise_add_triple_grad"} <= {op.type for op in program.global_block.ops}
    scope, executor = gradc.Scope(), gradc.Executor()
    executor.run(gradc.load(WEEK / "burgers" / "startup.pb"), scope=scope)
    gradc.load_params(scope, WEEK / "burgers" / "params.npz", program)
    feed, paddle = _feed("burgers"), np.load(WEEK / "burgers" / "paddle.npz")
    losses = [float(executor.run(program, feed, [META["burgers"]["loss"]], scope)[0]) for _ in range(40)]
    np.testing.assert_allclose(losses, paddle["losses"], rtol=1e-6)
    net = gradc.load(WEEK / "burgers" / "net.pb")
    u, = executor.run(net, {"x": feed["x"], "t": feed["t"]}, [META["burgers"]["net_out"]], scope)
    np.testing.assert_allclose(u, paddle["u_trained"], rtol=1e-5, atol=1e-6)


def test_a_net_normalising_its_coordinates_differentiates_and_trains(tmp_path):
    """Before, Paddle's program of a net that normalises its inputs, (x - mean) / std, was refused:
    elementwise_sub_grad_grad and elementwise_div_grad_grad had no definition (and Paddle's own minimize has no maker
    of the second). Now its loss is Paddle's, its gradient (third derivatives) that of float64 central differences,
    and it trains."""
    program, feed = gradc.load(WEEK / "normalised" / "pde.pb"), _feed("normalised")
    params, loss = dict(np.load(WEEK / "normalised" / "params.npz")), META["normalised"]["loss"]
    assert {"elementwise_sub_grad_grad", "elementwise_div_grad_grad"} <= {op.type for op in program.global_block.ops}
    _, checks = compare_program(program, feed, META["normalised"]["params"], loss, params, float64=True,
                                directions=3)
    assert [check.var for check in checks if check.mismatch is not None] == []
    train = tmp_path / "train.pb"
    assert gradc_cli("compile", WEEK / "normalised" / "pde.pb", "-o", train, "--optimizer", "adam").returncode == 0
    scope, executor, trained = gradc.Scope(), gradc.Executor(), gradc.load(train)
    executor.run(gradc.load(tmp_path / "train.startup.pb"), scope=scope)
    gradc.load_params(scope, WEEK / "normalised" / "params.npz", trained)
    losses = [float(executor.run(trained, feed, [loss], scope)[0]) for _ in range(20)]
    np.testing.assert_allclose(losses[0], np.load(WEEK / "normalised" / "paddle.npz")["losses"][0], rtol=1e-6)
    assert losses[-1] < 0.5 * losses[0]


def _burgers_the_gradc_way():
    """Paddle's net alone; u_x, u_t, u_xx by gradients(); the residual and the weighted losses appended by a
    ProgramBuilder on the loaded program, over one batch: collocation (64), boundary (16) and initial (16) points."""
    program, u, u_x, u_t, u_xx = _burgers_net_and_derivatives()
    net = gradc.ProgramBuilder(program=program)

    def op(type, inputs, attrs=None):
        return net.op(type, inputs, attrs)[0]

    def rows(var, start, end):
        return op("slice", {"Input": var}, {"axes": [0], "starts": [start], "ends": [end]})

    def mean_square(var):
        return op("reduce_mean", {"X": op("square", {"X": var})}, {"reduce_all": True})

    net.data("u0", [-1, 1])
    residual = op("elementwise_add", {"X": op("elementwise_add", {"X": u_t, "Y": op("elementwise_mul",
                                                                                    {"X": u, "Y": u_x})}),
                                      "Y": op("scale", {"X": u_xx}, {"scale": -0.01 / np.pi})})
    initial = op("elementwise_sub", {"X": rows(u, 80, 96), "Y": "u0"})
    loss = op("sum", {"X": [mean_square(rows(residual, 0, 64)), op("scale", {"X": mean_square(rows(u, 64, 80))},
                                                                        {"scale": 10.0}),
                            op("scale", {"X": mean_square(initial)}, {"scale": 5.0})]})
    feed = _feed("burgers")
    batch = {"x": np.concatenate([feed["x"], feed["xb"], feed["x0"]]),
             "t": np.concatenate([feed["t"], feed["tb"], feed["t0"]]), "u0": feed["u0"]}
    return program, loss, batch


def test_a_residual_appended_to_a_loaded_net_trains_to_paddles_losses():
    """Before, `ProgramBuilder(program=loaded)` was a TypeError: a builder made only new programs, and nothing
    documented appended ops, with their shapes inferred, to a loaded one. Now the Burgers loss built the gradc way on
    Paddle's net trains to the losses of Paddle's own program; the builder's names skip those the program has."""
    program, loss, batch = _burgers_the_gradc_way()
    again = gradc.ProgramBuilder(program=program.clone())   # the first builder wrote scale_0 ... scale_2
    assert again.op("scale", {"X": loss}, {"scale": 2.0}) == ["scale_3.tmp_0"]
    startup = gradc.optimizers.Adam(learning_rate=1e-3).minimize(program, loss=loss)
    scope, executor = gradc.Scope(), gradc.Executor()
    executor.run(startup, scope=scope)
    gradc.load_params(scope, WEEK / "burgers" / "params.npz", program)
    losses = [float(executor.run(program, batch, [loss], scope)[0]) for _ in range(40)]
    np.testing.assert_allclose(losses, np.load(WEEK / "burgers" / "paddle.npz")["losses"], rtol=2e-6)
