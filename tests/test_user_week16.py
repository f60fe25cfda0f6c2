"""A reinforcement-learning engineer's week (docs/tools.md): a Double-DQN with a target network, a PPO-clip
actor-critic and a squashed Gaussian policy built by Paddle 3.3.1 (tools/paddle_user_week16.py), legacy and PIR (Paddle
3's default), trained by Paddle's executor; trained, checked, synced, exported and rolled out with gradc; each fault
found, as the behaviour it has now."""

import json

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA

WEEK = DATA / "user_week16"
META = json.loads((WEEK / "meta.json").read_text())
PPO_LOGITS = "elementwise_add_1.tmp_0"   # the actor's output in gradc's names of ppo_pir.json's values


def _step_lines(run) -> list[dict]:
    assert run.returncode == 0, run.stderr
    return [line for line in map(json.loads, run.stdout.splitlines()) if line["event"] == "step"]


def _steps(run) -> list[dict]:
    return [line["values"] for line in _step_lines(run)]


def _pir_ppo(*args):
    return gradc_cli("train", WEEK / "ppo_pir.json", "--startup", WEEK / "ppo_pir_startup.json", "--params",
                     WEEK / "ppo_pir_init.npz", "--data", WEEK / "rollout.npz", "--batch-size", 8, "--epochs", 2,
                     "--json", "--log-every", 1, *args)


def test_paddles_pir_ppo_program_trains_over_a_data_set_to_paddles_losses():
    """Before, gradc train --data refused Paddle's PIR training program: its learning rate and Adam's 32 moments and
    beta powers are data ops (persistable) its startup program fills, and gradc took them for inputs the data lacked
    ("has no array 'learning_rate_0'"); gradc info listed them among the inputs. And it reported no loss ("no value to
    report"): a PIR program marks no op as the loss. Now persistable data vars are state, not inputs, and the loss is
    the scalar the backward's seed reads: the 8 steps are Paddle's."""
    losses = [values["elementwise_sub_4.tmp_0"] for values in _steps(_pir_ppo())]
    np.testing.assert_allclose(losses, META["ppo_pir"]["losses"], rtol=1e-5)
    info = gradc_cli("info", WEEK / "ppo_pir.json", "--json")
    facts = json.loads(info.stdout)
    assert [var["name"] for var in facts["inputs"]] == ["action", "logp_old", "obs", "returns"]
    assert facts["loss"] == "elementwise_sub_4.tmp_0"
    missing = gradc_cli("train", WEEK / "ppo_pir.json", "--params", WEEK / "ppo_pir_init.npz", "--data",
                        WEEK / "rollout.npz")
    assert missing.returncode == 1 and "no value for the persistable var(s) learning_rate_0" in missing.stderr


def test_a_pir_training_programs_forward_part_evaluates_and_exports_to_paddles_predictor(tmp_path):
    """Before, the backward's seed (a fill_any_like of ones reading the loss for its shape) made every forward op of a
    PIR training program look like a backward one: info counted 80 backward ops of 112 (37 are), and gradc evaluate,
    train --eval and export failed ("the program has no forward ops"). Now evaluate gives the loss Paddle's first step
    computed on the same batch, and the actor exported after training gives Paddle's Predictor's logits for the actor
    Paddle trained and saved."""
    assert "training program (37 backward, 32 optimizer ops)" in gradc_cli("info", WEEK / "ppo_pir.json").stdout
    np.savez(tmp_path / "first.npz", **{k: v[:8] for k, v in np.load(WEEK / "rollout.npz").items()})
    evaluated = gradc_cli("evaluate", WEEK / "ppo_pir.json", "--params", WEEK / "ppo_pir_init.npz", "--startup",
                          WEEK / "ppo_pir_startup.json", "--data", tmp_path / "first.npz", "--json")
    assert evaluated.returncode == 0, evaluated.stderr
    assert json.loads(evaluated.stdout)["loss"] == pytest.approx(META["ppo_pir"]["losses"][0], rel=1e-5)
    _steps(_pir_ppo("--save-params", tmp_path / "trained.npz"))
    exported = gradc_cli("export", WEEK / "ppo_pir.json", "--params", tmp_path / "trained.npz", "--input", "obs",
                         "--fetch", f"{PPO_LOGITS}=logits", "-o", tmp_path / "actor.json")
    assert exported.returncode == 0, exported.stderr
    run = gradc_cli("run", tmp_path / "actor.json", "--params", tmp_path / "actor.pdiparams", "--feed",
                    WEEK / "policy_obs.npz", "--out", tmp_path / "logits.npz")
    assert run.returncode == 0, run.stderr
    paddle = np.load(WEEK / "ppo_predictor.npz")
    np.testing.assert_allclose(np.load(tmp_path / "logits.npz")["logits"], paddle[paddle.files[0]], rtol=1e-5,
                               atol=1e-6)


def test_grad_norms_of_a_pir_program_are_those_its_updates_read():
    """Before, train --log-grad-norms of a PIR training program stopped: "no op of the program writes a parameter's
    gradient (PARAM@GRAD)", PIR's gradients having other names. Now the norms are of the gradients the update ops
    read: after ClipGradByGlobalNorm(0.5) in the PPO program (their total 0.5, which a warning says), as they are in
    the Gaussian policy's, which trains to Paddle's 4 losses."""
    run = _pir_ppo("--log-grad-norms")
    assert "the optimizer's ops write the gradients the updates read (an elementwise_mul" in run.stderr
    norms = [line["grad_norms"] for line in _step_lines(run)]
    assert len(norms) == 8 and all(len(step["parameters"]) == 8 for step in norms)
    assert all(step["total"] <= 0.5 + 1e-6 for step in norms)
    gauss = gradc_cli("train", WEEK / "gauss_pir.json", "--startup", WEEK / "gauss_pir_startup.json", "--params",
                      WEEK / "gauss_pir_init.npz", "--data", WEEK / "gauss.npz", "--batch-size", 8, "--json",
                      "--log-every", 1, "--log-grad-norms")
    lines = _step_lines(gauss)
    np.testing.assert_allclose([line["values"]["scale_7.tmp_0"] for line in lines], META["gauss_pir"]["losses"],
                               rtol=1e-5)
    assert lines[0]["grad_norms"]["parameters"].keys() == {"gaussian_0.w_0", "linear_4.w_0", "linear_4.b_0",
                                                           "linear_5.w_0", "linear_5.b_0"}


def test_check_holds_a_detached_advantage_constant_as_the_compiled_gradient_does(tmp_path):
    """Before, gradc check of the PPO loss found the critic's 3 weights off central differences (critic.fc1.w:
    compiled -0.0199, numeric 0.0032) and blamed share_data, the detach of the advantage: the differences counted the
    path through the detached value, which the user cut on purpose. Now detached values (a detach, stop_gradient =
    True) stay as they are in the differences, and every parameter agrees."""
    np.savez(tmp_path / "first.npz", **{k: v[:8] for k, v in np.load(WEEK / "rollout.npz").items()})
    run = gradc_cli("check", WEEK / "ppo_forward.pb", "--feed", tmp_path / "first.npz", "--startup",
                    WEEK / "ppo_startup.pb")
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.count(" ok") == 8 and "MISMATCH" not in run.stdout


def test_compiled_ppo_with_global_norm_clipping_trains_to_paddles_losses(tmp_path):
    compiled = gradc_cli("compile", WEEK / "ppo_forward.pb", "-o", tmp_path / "train.pb", "--optimizer", "adam",
                         "--lr", "0.01", "--clip-global-norm", "0.5")
    assert compiled.returncode == 0, compiled.stderr
    run = gradc_cli("train", tmp_path / "train.pb", "--startup", WEEK / "ppo_startup.pb", "--startup",
                    tmp_path / "train.startup.pb", "--data", WEEK / "rollout.npz", "--batch-size", 8, "--epochs", 2,
                    "--json", "--log-every", 1)
    losses = [values[META["ppo"]["loss"]] for values in _steps(run)]
    np.testing.assert_allclose(losses, META["ppo"]["losses"], rtol=1e-5)


def test_dqn_with_a_synced_target_network_trains_syncs_and_exports_as_in_paddle(tmp_path):
    """Not a fault: Paddle's Double-DQN program, stepped by Trainer.train_step with the target network synced by
    assigning the online parameters in the scope every 3 steps, gives Paddle's 6 losses; PARL's soft sync, a program
    of its own, run by the Executor on the trainer's scope, gives Paddle's parameters after it; the exported Q-network
    gives Paddle's Predictor's Q-values, and so the greedy actions of a rollout."""
    trainer = gradc.Trainer(WEEK / "dqn.pb", WEEK / "dqn_startup.pb")
    for name, value in np.load(WEEK / "dqn_init.npz").items():   # the seeded startup draws Paddle's weights
        np.testing.assert_array_equal(trainer.scope[name], value, err_msg=name)
    online = [name for name in np.load(WEEK / "dqn_init.npz").files if name.startswith("q.")]
    losses = []
    for step, batch in enumerate(gradc.Dataset(dict(np.load(WEEK / "replay.npz"))).batches(0, 8), 1):
        losses += trainer.train_step(batch)
        if step % 3 == 0:
            for name in online:
                trainer.scope["target_" + name] = trainer.scope[name].copy()
    np.testing.assert_allclose(losses, META["dqn"]["losses"], rtol=1e-5)
    gradc.Executor().run(gradc.load(WEEK / "dqn_soft_sync.pb"), {}, [], trainer.scope)
    for name, value in np.load(WEEK / "dqn_synced.npz").items():
        np.testing.assert_allclose(trainer.scope[name], value, rtol=1e-5, atol=1e-6, err_msg=name)
    gradc.save_params(trainer.scope, tmp_path / "trained.npz", trainer.program)
    exported = gradc_cli("export", WEEK / "dqn.pb", "--params", tmp_path / "trained.npz", "--input", "obs",
                         "--fetch", f"{META['dqn']['q']}=q", "-o", tmp_path / "qnet")
    assert exported.returncode == 0, exported.stderr
    q_net = gradc.load(tmp_path / "qnet.pdmodel")
    scope = gradc.Scope()
    gradc.load_params(scope, tmp_path / "qnet.pdiparams", q_net)
    obs = np.load(WEEK / "policy_obs.npz")["obs"]
    (q,) = gradc.Executor().run(q_net, {"obs": obs}, ["q"], scope)
    paddle = np.load(WEEK / "dqn_predictor.npz")
    np.testing.assert_allclose(q, paddle[paddle.files[0]], rtol=1e-5, atol=1e-6)
    greedy = [int(np.argmax(gradc.Executor().run(q_net, {"obs": row[None]}, ["q"], scope)[0])) for row in obs]
    assert greedy == list(np.argmax(paddle[paddle.files[0]], axis=1))


def test_paddles_jit_saved_gaussian_policy_runs_to_its_predictor(tmp_path):
    run = gradc_cli("run", WEEK / "gauss_policy.json", "--params", WEEK / "gauss_policy.pdiparams", "--feed",
                    WEEK / "policy_obs.npz", "--out", tmp_path / "actions.npz")
    assert run.returncode == 0, run.stderr
    actions, paddle = np.load(tmp_path / "actions.npz"), np.load(WEEK / "gauss_predictor.npz")
    np.testing.assert_allclose(actions[actions.files[0]], paddle[paddle.files[0]], rtol=1e-5, atol=1e-6)
    assert np.abs(actions[actions.files[0]]).max() < 1   # tanh-squashed
