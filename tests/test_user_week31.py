"""A generative-model researcher's week (docs/tools.md): a VAE (its noise drawn in the program by paddle.randn, or fed)
and a RealNVP-like flow built with Paddle 3.3.1's layers (tools/paddle_user_week31.py, the PIR half
tools/paddle_user_week31_pir.py), trained with Adam step by step against Paddle, evaluated (the negative ELBO, bits per
dim), sampled from the prior through the decoder and the inverse flow, and checked against central differences; each
fault found, as the behaviour it has now."""

import json

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA, unpacked

WEEK = DATA / "user_week31"
META = json.loads((WEEK / "meta.json").read_text())
SEEDS = META["seeds"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The week's files unpacked, and the first training batch of each model as a feed (the VAE's with Paddle's
    step-1 noise too, for the program that takes it fed)."""
    out = unpacked(WEEK, tmp_path_factory.mktemp("week31"))
    vae_x, flow_x = np.load(out / "vae_data.npz")["x"][:8], np.load(out / "flow_data.npz")["x"][:8]
    np.savez(out / "vae_feed.npz", x=vae_x)
    np.savez(out / "vae_fed_feed.npz", x=vae_x, eps=np.load(out / "vae_grads.npz")["eps"])
    np.savez(out / "flow_feed.npz", x=flow_x)
    np.savez(out / "flow_z.npz", z=np.load(out / "flow_eval.npz")["z"])
    return out


def _ok(done):
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def _largest_difference(ours: dict, paddle, names=None) -> float:
    return max(float(np.abs(np.asarray(ours[name]) - paddle[name]).max()) for name in (names or paddle.files))


def test_check_holds_the_programs_noise_fixed_and_seed_gives_paddles_draws(files):
    """Before, `gradc check` of the VAE (its eps drawn by paddle.randn in the program) drew new noise at every forward
    run of the comparison: the central differences were of the noise, 2.4e5 to 4.7e5 against gradients below 1, and
    all 10 parameters MISMATCHed. Now every run draws what the first draws, and --seed N draws, from the startup on,
    what paddle.seed(N) draws: the compiled gradients are Paddle's step-1 gradients to 2e-7."""
    for seeded in ([], ["--seed", str(SEEDS["vae"])]):
        done = _ok(gradc_cli("check", files / "vae_forward.pb", "--feed", files / "vae_feed.npz", "--startup",
                             files / "vae_startup.pb", *seeded))
        assert done.stdout.count(" ok\n") == 10 and "MISMATCH" not in done.stdout
    from gradc.executor import randomness
    from gradc.gradcheck import compare_program
    from gradc.training.params import initialised_values
    randomness.seed(SEEDS["vae"])
    values = initialised_values([files / "vae_startup.pb"])
    analytic, checks = compare_program(gradc.load(files / "vae_forward.pb"), dict(np.load(files / "vae_feed.npz")),
                                       None, None, values, max_elements=4, float64=True)
    assert all(check.mismatch is None for check in checks)
    paddle = np.load(files / "vae_grads.npz")
    assert max(float(np.abs(value - paddle[name + "@GRAD"]).max()) for name, value in analytic.items()) < 2e-7


def test_evaluate_seed_gives_paddles_test_elbo(files):
    """Before, `gradc evaluate` of the VAE gave another negative ELBO at every call (11.1693, 11.1844: fresh noise)
    and had no --seed; now --seed 231 gives Paddle's test loss after paddle.seed(231), exactly."""
    runs = [json.loads(_ok(gradc_cli("evaluate", files / "vae_forward.pb", "--params", files / "vae_trained.npz",
                                     "--data", files / "vae_test.npz", "--seed", str(SEEDS["eval"]),
                                     "--json")).stdout) for _ in range(2)]
    assert runs[0]["loss"] == runs[1]["loss"] == pytest.approx(META["vae"]["test_loss"], rel=1e-7, abs=0)


def test_check_names_the_loss_label_an_input_reaches_the_loss_through(files):
    """The BCE's Label is x itself: its gradient there is none, as in Paddle, so `check --wrt x` differs from central
    differences. Before, the error said only "gradients differ ... for x"; now it names the op and its input. The fed
    noise's gradient agrees (1.3e-9)."""
    done = gradc_cli("check", files / "vae_fed.pb", "--feed", files / "vae_fed_feed.npz", "--params",
                     files / "vae_init.npz", "--wrt", "eps", "--wrt", "x", "--max-elements", "100")
    assert done.returncode == 1
    assert "eps     24/24" in done.stdout and done.stdout.splitlines()[0].endswith(" ok")
    assert done.stderr == ("gradc: error: gradients differ from central differences for x; the loss depends on them "
                           "through ops without a gradient (Paddle defines none) or inputs that get none (a loss's "
                           "label, as in Paddle), a part central differences count and the compiled gradient does not: "
                           "sigmoid_cross_entropy_with_logits (block 0, op 17) input Label\n")


def test_export_of_a_sampler_takes_no_input_and_samples_paddles_draws(files):
    """Before, `gradc export` of the prior sampler (z = paddle.randn([8, 3]) through the decoder) was refused:
    "Missing option '--input'", where Paddle's save_inference_model takes feed_vars=[] and its export samples. Now
    it writes a model without feed ops, which gradc runs with --seed 131 to Paddle's samples (its draws exactly, the
    probabilities to 1e-7)."""
    done = _ok(gradc_cli("export", files / "vae_sample.pb", "--params", files / "vae_trained.npz",
                         "--fetch", META["vae"]["samples"], "-o", files / "sampler"))
    assert "(inputs none: a sampler; fetches sigmoid_0.tmp_0)" in done.stdout
    assert not [op for op in gradc.load(files / "sampler.pdmodel").global_block.ops if op.type == "feed"]
    _ok(gradc_cli("run", files / "sampler.pdmodel", "--params", files / "sampler.pdiparams", "--seed",
                  str(SEEDS["sample"]), "-o", files / "sampled.npz"))
    np.testing.assert_allclose(np.load(files / "sampled.npz")[META["vae"]["samples"]],
                               np.load(files / "vae_eval.npz")["samples"], rtol=0, atol=2e-7)


def test_check_of_a_constants_output_gives_its_gradient(files):
    """Before, `check --wrt 'c*'` (meant for the couplings) took in Normal(0, 1)'s loc and scale (create_tensor_0 and
    _1, written by assign_value) and MISMATCHed: a var a constant op writes got no gradient (compiled 0, numeric
    -4.9 for the first mask); now each is a leaf of the program cut there, and all 132 float vars of the flow agree."""
    done = _ok(gradc_cli("check", files / "flow_forward.pb", "--feed", files / "flow_feed.npz", "--params",
                         files / "flow_init.npz", "--wrt", "create_tensor_*", "--wrt", "assign_0.tmp_0"))
    assert done.stdout.count(" ok\n") == 3


def test_check_of_an_integer_var_is_one_error_line(files):
    """Before, `check --wrt '*'` of the VAE perturbed the int32 shape its randn reads ([8, 3] to [7, 3]) and failed in
    the elementwise_mul with "cannot broadcast shapes [8, 3] and [7, 3]"; now a glob takes float vars only and an
    integer var named is refused: 39 of the 40 float vars agree, x differs by its label path; of the 39, the constant
    1.0 no op reads (fill_constant_1.tmp_0) agrees at 0 both ways, said to have no path to the loss."""
    done = gradc_cli("check", files / "vae_forward.pb", "--feed", files / "vae_feed.npz", "--params",
                     files / "vae_init.npz", "--wrt", "shape_0.tmp_0")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == ("gradc: error: no gradient of shape_0.tmp_0 (int32): only float vars have one (--wrt, wrt= "
                           "in Python)\n")
    every = gradc_cli("check", files / "vae_forward.pb", "--feed", files / "vae_feed.npz", "--params",
                      files / "vae_init.npz", "--wrt", "*", "--max-elements", "4")
    assert "shape_0.tmp_0" not in every.stdout and every.stdout.count(" ok\n") == 38
    (unreached,) = [row for row in every.stdout.splitlines() if row.endswith("ok (no path to the loss: 0 both ways)")]
    assert unreached.startswith("fill_constant_1.tmp_0 ")
    assert "differ from central differences for x;" in every.stderr   # the BCE's label, as above


def test_info_of_a_sampler_says_compile_needs_a_loss(files):
    """Before, `gradc info vae_sample.pb` (no loss: z through the decoder) said "forward program: gradc compile appends
    its backward", and compile then refused it ("cannot pick the loss by itself")."""
    lines = _ok(gradc_cli("info", files / "vae_sample.pb")).stdout.splitlines()
    assert lines[1] == ("kind: forward program without a loss gradc picks: gradc run runs it; gradc compile needs "
                        "--loss NAME")
    assert "loss: none (no float scalar the program could minimise)" in lines
    assert gradc_cli("compile", files / "vae_sample.pb", "-o", files / "none.pb").returncode == 1


def test_flows_step_one_gradients_are_paddles(files):
    """No noise in the flow's loss: gradc's gradients at Paddle's initial weights are Paddle's step-1 ones to 1e-6
    (8.3e-7; the largest is 3.4)."""
    from gradc.gradcheck import compare_program
    analytic, checks = compare_program(gradc.load(files / "flow_forward.pb"), dict(np.load(files / "flow_feed.npz")),
                                       None, None, dict(np.load(files / "flow_init.npz")), max_elements=2)
    paddle = np.load(files / "flow_grads.npz")
    assert len(analytic) == 24
    assert max(float(np.abs(value - paddle[name + "@GRAD"]).max()) for name, value in analytic.items()) < 1e-6


@pytest.mark.parametrize("model, lr", [("vae", "0.01"), ("flow", "0.005")])
def test_compiled_and_paddles_training_programs_train_as_paddle(files, model, lr):
    """compile --optimizer adam of the forward, and Paddle's own minimize program, trained from Paddle's startup with
    its stream (paddle.seed, the VAE's noise drawn in the program): Paddle's 6 losses to 1e-6 relative, its weights to
    1.2e-7."""
    _ok(gradc_cli("compile", files / f"{model}_forward.pb", "-o", files / f"{model}_ours.pb", "--optimizer", "adam",
                  "--lr", lr))
    paddle = np.load(files / f"{model}_trained.npz")
    for program, startups in [(f"{model}_ours.pb", [f"{model}_startup.pb", f"{model}_ours.startup.pb"]),
                              (f"{model}_train.pb", [f"{model}_startup.pb"])]:
        trainer = gradc.Trainer(files / program, [files / s for s in startups], fetch=META[model]["loss"],
                                seed=SEEDS[model], paddle_stream=True)
        data = np.load(files / f"{model}_data.npz")["x"]
        losses = [trainer.train_step({"x": data[step * 8:(step + 1) * 8]})[0] for step in range(6)]
        np.testing.assert_allclose(losses, META[model]["losses"], rtol=1e-6)
        assert _largest_difference(trainer.scope, paddle) < 1.2e-7


def test_samples_evaluation_and_inverse_are_paddles(files):
    """The prior's samples through the decoder and the inverse flow (--seed 131), the flow's test loss and bits per
    dim, and the inverse of the test set's latents."""
    for model in ("vae", "flow"):
        _ok(gradc_cli("run", files / f"{model}_sample.pb", "--params", files / f"{model}_trained.npz", "--seed",
                      str(SEEDS["sample"]), "--fetch", META[model]["samples"], "-o", files / f"{model}_s.npz"))
        np.testing.assert_allclose(np.load(files / f"{model}_s.npz")[META[model]["samples"]],
                                   np.load(files / f"{model}_eval.npz")["samples"], rtol=0, atol=5e-7)
    for program, key in [("flow_forward.pb", "test_loss"), ("flow_bpd.pb", "bits_per_dim")]:
        done = json.loads(_ok(gradc_cli("evaluate", files / program, "--params", files / "flow_trained.npz", "--data",
                                        files / "flow_test.npz", "--json")).stdout)
        assert done["loss"] == pytest.approx(META["flow"][key], rel=1e-6)
    _ok(gradc_cli("run", files / "flow_inverse.pb", "--params", files / "flow_trained.npz", "--feed",
                  files / "flow_z.npz", "--fetch", META["flow"]["inverse"], "-o", files / "inverse.npz"))
    inverse = np.load(files / "inverse.npz")[META["flow"]["inverse"]]
    np.testing.assert_allclose(inverse, np.load(files / "flow_eval.npz")["inverse"], rtol=0, atol=1e-6)
    np.testing.assert_allclose(inverse, np.load(files / "flow_test.npz")["x"], rtol=0, atol=1e-6)


@pytest.mark.parametrize("program, args", [
    ("flow_forward.pb", ["--feed", "flow_feed.npz", "--params", "flow_init.npz", "--wrt", "*", "--max-elements", "8"]),
    ("flow_inverse.pb", ["--feed", "flow_z.npz", "--params", "flow_trained.npz", "--loss", "tmp_31"]),
    ("flow_pir_forward.json", ["--feed", "flow_feed.npz", "--params", "flow_pir_init.npz"])])
def test_the_flows_gradients_agree_with_central_differences(files, program, args):
    """The couplings' log-determinant and log-likelihood, the inverse (its sum), and the PIR forward."""
    done = _ok(gradc_cli("check", files / program, *[files / a if a.endswith((".npz",)) else a for a in args]))
    assert "MISMATCH" not in done.stdout and "compiled gradients agree" in done.stdout


def test_check_of_a_training_program_reads_its_optimizer_state_without_a_warning(files):
    """Before, `check vae_pir_train.json --params vae_pir_init.npz` (Paddle's PIR minimize program and its persistables)
    warned that 41 of the file's 51 values (Adam's moments and powers) name no var of the program: they were matched
    against the forward part it checks. Now only the note that the forward part is checked."""
    done = _ok(gradc_cli("check", files / "vae_pir_train.json", "--params", files / "vae_pir_init.npz", "--feed",
                         files / "vae_feed.npz", "--seed", str(META["vae_pir"]["noise_seed"])))
    assert done.stdout.count(" ok\n") == 10
    assert done.stderr == (f"gradc: note: '{files / 'vae_pir_train.json'}' is a training program: checking its "
                           f"forward part (its backward and optimizer ops left out)\n")


def test_pir_programs_train_as_paddle(files):
    """Paddle's PIR minimize of the flow (Normal.log_prob) and of the VAE written with Normal.rsample and
    kl_divergence (its noise from paddle.seed(331), --paddle-stream), and the PIR forward compiled by gradc: Paddle's
    losses to 1e-6 relative and its weights to 1.2e-7."""
    _ok(gradc_cli("compile", files / "flow_pir_forward.json", "-o", files / "flow_ours.json", "--optimizer", "adam",
                  "--lr", "0.005"))
    for program, startups, model, seed in [("flow_pir_train.json", [], "flow_pir", 0),
                                           ("flow_ours.json", ["flow_ours.startup.json"], "flow_pir", 0),
                                           ("vae_pir_train.json", [], "vae_pir", META["vae_pir"]["noise_seed"])]:
        trainer = gradc.Trainer(files / program, [files / s for s in startups], fetch="loss", seed=seed,
                                paddle_stream=True)
        gradc.load_params(trainer.scope, files / f"{model}_init.npz", trainer.program)
        data = np.load(files / f"{model.split('_')[0]}_data.npz")["x"]
        losses = [trainer.train_step({"x": data[step * 8:(step + 1) * 8]})[0] for step in range(6)]
        np.testing.assert_allclose(losses, META[model]["losses"], rtol=1e-6)
        assert _largest_difference(trainer.scope, np.load(files / f"{model}_trained.npz")) < 1.2e-7
