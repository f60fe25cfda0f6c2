"""A GAN trainer's week (docs/tools.md): a small plain GAN in two programs over one scope, the discriminator's
(the generator's output detached) and the generator's (through the discriminator, its parameters in the no-grad
set), each with its own Adam over its own parameters, k=2 discriminator steps per generator step; Paddle 3.3.1's
executor's losses and trained weights (tools/paddle_user_week9.py); an EMA of the generator, the two networks saved
apart and the generator exported alone; each fault found, as the behaviour it has now."""

import json

import numpy as np

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA
from gradc import optimizers

WEEK = DATA / "user_week9"
META = json.loads((WEEK / "meta.json").read_text())
BATCHES = dict(np.load(WEEK / "batches.npz"))
D_PARAMS, G_PARAMS = META["d_params"], META["g_params"]


def _alternate(d_main, g_main, scope, ema_decay=None):
    """META's rounds of K discriminator steps and one generator step: the losses, and the generator's EMA."""
    executor, d_losses, g_losses = gradc.Executor(), [], []
    ema = {name: np.array(scope[name]) for name in G_PARAMS}
    for r in range(META["rounds"]):
        for k in range(META["k"]):
            feed = {"real": BATCHES[f"real{r}_{k}"], "noise": BATCHES[f"dnoise{r}_{k}"]}
            d_losses.append(float(executor.run(d_main, feed=feed, fetch_list=[META["d_loss"]], scope=scope)[0]))
        feed = {"noise": BATCHES[f"gnoise{r}"]}
        g_losses.append(float(executor.run(g_main, feed=feed, fetch_list=[META["g_loss"]], scope=scope)[0]))
        if ema_decay is not None:
            ema = {name: ema_decay * value + (1 - ema_decay) * np.asarray(scope[name]) for name, value in ema.items()}
    return d_losses, g_losses, ema


def _started(d_main, g_main, *startups):
    scope, executor = gradc.Scope(), gradc.Executor()
    for startup in startups:
        executor.run(startup, scope=scope)
    gradc.load_params(scope, WEEK / "init.npz", d_main)   # d_main reads both networks' parameters
    return scope


def _assert_paddles(d_losses, g_losses, scope):
    np.testing.assert_allclose(d_losses, META["d_losses"], atol=5e-7)
    np.testing.assert_allclose(g_losses, META["g_losses"], atol=5e-7)
    for name, value in np.load(WEEK / "trained.npz").items():
        np.testing.assert_allclose(np.asarray(scope[name]), value, atol=5e-7, err_msg=name)


def test_paddles_two_programs_alternate_over_one_scope_to_paddles_losses():
    d_main, g_main = gradc.load(WEEK / "d_main.pb"), gradc.load(WEEK / "g_main.pb")
    scope = _started(d_main, g_main, gradc.load(WEEK / "startup.pb"))
    _assert_paddles(*_alternate(d_main, g_main, scope)[:2], scope)


def _cli_compiled(tmp_path):
    d_args = [a for name in D_PARAMS for a in ("--param", name)]
    g_args = [a for name in G_PARAMS for a in ("--param", name)] + [a for name in D_PARAMS for a in ("--no-grad", name)]
    for net, loss, args, lr in (("d", META["d_loss"], d_args, "2e-3"), ("g", META["g_loss"], g_args, "1e-3")):
        result = gradc_cli("compile", WEEK / f"{net}_forward.pb", "--loss", loss, *args, "--optimizer", "adam",
                           "--lr", lr, "--beta1", "0.5", "-o", tmp_path / f"{net}_train.pb")
        assert result.returncode == 0, result.stderr
    return [gradc.load(tmp_path / name) for name in ("d_train.pb", "g_train.pb", "d_train.startup.pb",
                                                     "g_train.startup.pb")]


def test_two_cli_compiled_optimizers_keep_their_own_learning_rates_in_one_scope(tmp_path):
    # fault: both startups filled 'learning_rate_0', so the discriminator stepped at the generator's 1e-3
    d_main, g_main, d_startup, g_startup = _cli_compiled(tmp_path)
    assert gradc.schedules.learning_rate_vars(d_main) == ["d_b0_learning_rate_0"]
    assert gradc.schedules.learning_rate_vars(g_main) == ["g_b0_learning_rate_0"]
    scope = _started(d_main, g_main, d_startup, g_startup)
    _assert_paddles(*_alternate(d_main, g_main, scope)[:2], scope)


def test_python_api_minimize_over_parameter_lists_matches_paddle():
    d_main, g_main = gradc.load(WEEK / "d_forward.pb"), gradc.load(WEEK / "g_forward.pb")
    d_startup = optimizers.Adam(2e-3, beta1=0.5).minimize(d_main, META["d_loss"], parameter_list=D_PARAMS)
    g_startup = optimizers.Adam(1e-3, beta1=0.5).minimize(g_main, META["g_loss"], parameter_list=G_PARAMS,
                                                          no_grad_set=D_PARAMS)
    scope = _started(d_main, g_main, d_startup, g_startup)
    _assert_paddles(*_alternate(d_main, g_main, scope)[:2], scope)


def test_one_optimizer_over_every_parameter_keeps_paddles_name():
    g_main = gradc.load(WEEK / "g_forward.pb")
    optimizers.Adam(1e-3).minimize(g_main, META["g_loss"])
    assert gradc.schedules.learning_rate_vars(g_main) == ["learning_rate_0"]


def test_generators_ema_saved_apart_and_exported_alone(tmp_path):
    d_main, g_main, d_startup, g_startup = _cli_compiled(tmp_path)
    scope = _started(d_main, g_main, d_startup, g_startup)
    ema = _alternate(d_main, g_main, scope, ema_decay=0.9)[2]
    assert gradc.save_params(scope, tmp_path / "d.pdparams", d_main, names=D_PARAMS) == sorted(D_PARAMS)
    assert gradc.save_params(scope, tmp_path / "g.npz", g_main, names=G_PARAMS) == sorted(G_PARAMS)
    gradc.export(g_main, tmp_path / "gen", feeds=["noise"], fetches=["tanh_0.tmp_0"], values=ema)
    model = gradc.load(tmp_path / "gen.pdmodel")
    params = sorted(name for name, var in model.global_block.vars.items() if var.persistable
                    and name not in ("feed", "fetch"))
    assert params == sorted(G_PARAMS)   # none of the discriminator's, no optimizer state
    sampler = gradc.Scope()
    gradc.load_params(sampler, tmp_path / "gen.pdiparams", model, strict=True)
    (samples,) = gradc.Executor().run(model, feed={"noise": BATCHES["gnoise0"]}, scope=sampler)
    reference = gradc.Scope()
    g_forward = gradc.load(WEEK / "g_forward.pb")   # the generator's loss reads both networks
    gradc.load_params(reference, tmp_path / "d.pdparams", g_forward)
    for name, value in ema.items():
        reference[name] = value
    (expected,) = gradc.Executor().run(g_forward, feed={"noise": BATCHES["gnoise0"]}, fetch_list=["tanh_0.tmp_0"],
                                       scope=reference)
    np.testing.assert_allclose(samples, expected, atol=1e-6)
    assert not np.allclose(ema["g_w0"], np.asarray(scope["g_w0"]))   # the EMA is not the last step's weights
