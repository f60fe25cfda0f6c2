"""An optimisation researcher's week (docs/tools.md): every static optimizer, learning-rate scheduler, regularizer and
gradient clipping of Paddle 3.3.1 on an MLP, a small CNN and a tiny LSTM language model (tools/paddle_user_week46.py):
Paddle's own training programs run by gradc, and gradc's compilations of the forward with the same settings, against
Paddle's per-step losses and trained weights; resuming mid-schedule; ExponentialMovingAverage. Each fault found, as
the behaviour it has now."""

import json

import numpy as np
import pytest

from cli_inprocess import gradc_cli
from fixtures import DATA, step_losses, unpacked
from user_weeks import train_steps

WEEK = DATA / "user_week46"
META = json.loads((WEEK / "meta.json").read_text())
MODELS = ("mlp", "cnn", "lstm", "attrs")
# each case's schedule as gradc train --lr-schedule takes it (Paddle's class and arguments)
SCHEDULES = {
    "sgd_piecewise": "PiecewiseDecay([2, 4], [0.1, 0.05, 0.01])",
    "adamax_exponential": "ExponentialDecay(0.02, 0.9)",
    "adagrad_natural_exp": "NaturalExpDecay(0.05, 0.2)",
    "rmsprop_centered": "InverseTimeDecay(0.01, 0.5)",
    "sgd_polynomial_cycle": "PolynomialDecay(0.1, 2, 0.01, 2.0, cycle=True)",
    "momentum_multistep": "MultiStepDecay(0.05, [2, 5], 0.5)",
    "sgd_step": "StepDecay(0.1, 2, 0.5)",
    "adam_warm_restarts": "CosineAnnealingWarmRestarts(0.01, 2, 2)",
    "sgd_cyclic": "CyclicLR(0.01, 0.1, 2)",
    "adam_one_cycle": "OneCycleLR(0.05, 6)",
    "adamw_warmup_cosine": "LinearWarmup(CosineAnnealingDecay(0.01, 6), 2, 0.0, 0.01)",
    "sgd_lambda": "LambdaDecay(0.1, lambda epoch: 0.8 ** epoch)",
    "sgd_multiplicative": "MultiplicativeDecay(0.1, lambda epoch: 0.9 if epoch < 3 else math.cos(0.5))",
    "sgd_plateau": "ReduceOnPlateau(0.1, factor=0.5, patience=0, threshold=0.5, cooldown=1)",
    "momentum_multistep_epochs": "MultiStepDecay(0.05, [2, 4], 0.5)",
}
# the cases whose loop steps the scheduler once an epoch of two batches (6 epochs): gradc train --epochs 6, and
# --lr-per-epoch for a scheduler counting epochs
PER_EPOCH = {"sgd_plateau": (), "momentum_multistep_epochs": ("--lr-per-epoch",)}
# each case's gradc compile options: Paddle's optimizer arguments as a user gives them
COMPILE = {
    "sgd_piecewise": "--optimizer sgd --lr 0.1",
    "momentum_nesterov_l2": "--optimizer momentum --lr 0.05 --momentum 0.9 --nesterov --l2 0.001",
    "adam_amsgrad": "--optimizer adam --lr 0.01 --opt amsgrad=True",
    "adamw_no_bias": "--optimizer adamw --lr 0.01 --weight-decay 0.05 --no-decay *.b_0",
    "adamax_exponential": "--optimizer adamax --lr 0.02",
    "adagrad_natural_exp": "--optimizer adagrad --lr 0.05",
    "adadelta": "--optimizer adadelta --lr 1.0 --opt rho=0.9 --epsilon 1e-6",
    "rmsprop_centered": "--optimizer rmsprop --lr 0.01 --opt rho=0.9 --momentum 0.5 --opt centered=True",
    "rmsprop": "--optimizer rmsprop --lr 0.01",
    "lamb_excluded": "--optimizer lamb --lr 0.01 --opt lamb_weight_decay=0.01 --no-decay *.b_0",
    "lamb_zero_bias": "--optimizer lamb --lr 0.01 --opt lamb_weight_decay=0.01",
    "adam_multi_precision": "--optimizer adam --lr 0.01 --opt multi_precision=True",
    "nadam": "--optimizer nadam --lr 0.01",
    "radam": "--optimizer radam --lr 0.01",
    "rprop": "--optimizer rprop --lr 0.01",
    "sgd_polynomial_cycle": "--optimizer sgd --lr 0.1",
    "momentum_multistep": "--optimizer momentum --lr 0.05",
    "sgd_step": "--optimizer sgd --lr 0.1",
    "adam_warm_restarts": "--optimizer adam --lr 0.01",
    "sgd_cyclic": "--optimizer sgd --lr 0.01",
    "adam_one_cycle": "--optimizer adam --lr 0.05",
    "adamw_warmup_cosine": "--optimizer adamw --lr 0.01 --weight-decay 0.01 --clip-global-norm 1",
    "sgd_lambda": "--optimizer sgd --lr 0.1",
    "sgd_multiplicative": "--optimizer sgd --lr 0.1",
    "sgd_plateau": "--optimizer sgd --lr 0.1",
    "momentum_multistep_epochs": "--optimizer momentum --lr 0.05",
    "clip_value": "--optimizer sgd --lr 0.1 --clip-value 0.05",
    "clip_norm": "--optimizer sgd --lr 0.1 --clip-norm 0.1",
    "clip_global_need_clip": "--optimizer momentum --lr 0.1 --clip-global-norm 0.1 --no-clip linear_1.b_0 "
                             "--param-l1 linear_0.w_0=0.02",
    "l1_param_l2_global": "--optimizer sgd --lr 0.1 --l2 0.01 --param-l1 linear_0.w_0=0.02",
    "lookahead": "--optimizer adam --lr 0.01 --lookahead 2,0.5",
}
# the mlp cases whose compilation is Paddle's program op for op (gradc diff: "the same")
SAME_PROGRAM = [case for case in COMPILE if META[case]["model"] == "mlp" and case != "lookahead"] + [
    "rmsprop", "momentum_multistep"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return unpacked(WEEK, tmp_path_factory.mktemp("week46"), (*MODELS, *META))


def _train(files, case, program, startup, *extra):
    """gradc train from Paddle's initial weights on the case's batches, its schedule given; (losses, trained)."""
    model, per_epoch = META[case]["model"], case in PER_EPOCH
    trained = files / f"gradc_{case}_{program.stem}.npz"
    schedule = ("--lr-schedule", SCHEDULES[case]) if case in SCHEDULES else ()
    run = train_steps(program, startup, files / model / ("data_plateau.npz" if per_epoch else "data.npz"), 8,
                      "--params", files / model / "init.npz", "--save-params", trained,
                      *(("--epochs", 6, *PER_EPOCH[case]) if per_epoch else ()), *schedule, *extra)
    return step_losses(run), np.load(trained)


def _agrees(files, case, losses, trained, loss_rtol=4e-7, weight_atol=4e-7):
    np.testing.assert_allclose(losses, META[case]["losses"], rtol=loss_rtol)
    paddle = np.load(files / case / "trained.npz")
    for name in (name for name in paddle.files if name != "@LR_DECAY_COUNTER@"):   # the weights, not the counter
        np.testing.assert_allclose(trained[name], paddle[name], rtol=0, atol=weight_atol, err_msg=name)


@pytest.mark.parametrize("case", list(META))
def test_paddles_training_program_trains_in_gradc_to_its_losses_and_weights(files, case):
    """Paddle's own minimize() program of each case (every optimizer, the schedules written by the host, clipping,
    L1/L2 decay per ParamAttr and global, need_clip=False, ExponentialMovingAverage's ops, LookAhead's) run by gradc
    train: Paddle's 6 losses (12 for ReduceOnPlateau's epochs) to 1.4e-7 relative and its weights to 2e-7."""
    losses, trained = _train(files, case, files / case / "train.pb", files / case / "startup.pb")
    _agrees(files, case, losses, trained)


@pytest.mark.parametrize("case", list(COMPILE))
def test_gradc_compile_with_the_same_settings_trains_to_paddles_numbers(files, case, tmp_path):
    """gradc compile of the forward with the case's options (the schedule given to train): Paddle's losses and
    weights, as its own program. Fault: Paddle's ParamAttr(need_clip=False) and ParamAttr(regularizer=L1Decay(..))
    had no compile option (a saved program does not keep them): the two cases ended 7e-2 and 6e-3 from Paddle's
    losses; now --no-clip GLOB and --param-l1/--param-l2 GLOB=C. LambdaDecay and MultiplicativeDecay were unknown
    schedules; now their lambda is read (never run). paddle.incubate.LookAhead had no option (3.7e-2 from Paddle's
    losses as plain Adam); now --lookahead K[,ALPHA]."""
    model = META[case]["model"]
    out = tmp_path / f"{case}.pb"
    compiled = gradc_cli("compile", files / model / "forward.pb", "-o", out, *COMPILE[case].split())
    assert compiled.returncode == 0, compiled.stderr
    losses, trained = _train(files, case, out, tmp_path / f"{case}.startup.pb")
    _agrees(files, case, losses, trained)


@pytest.mark.parametrize("case", ["clip_global_need_clip", "l1_param_l2_global", *SAME_PROGRAM])
def test_compiled_program_is_paddles_op_for_op(files, case, tmp_path):
    """gradc diff of Paddle's training program and gradc's: the same ops, vars and attributes (the per-parameter
    settings included), but for the fill_constant name the global-norm clip numbers differently."""
    out = tmp_path / "compiled.pb"
    assert gradc_cli("compile", files / META[case]["model"] / "forward.pb", "-o", out,
                     *COMPILE[case].split()).returncode == 0
    diff = gradc_cli("diff", files / case / "train.pb", out)
    if case == "clip_global_need_clip":
        changed = [line for line in diff.stdout.splitlines() if line.startswith("  ~ op")]
        assert all("fill_constant_1.tmp_0" in line for line in changed) and len(changed) == 3, diff.stdout
    else:
        assert "are the same" in diff.stdout, diff.stdout


def test_per_parameter_options_refuse_what_they_cannot_mean(files, tmp_path):
    """--no-clip without clipping, a glob matching no parameter, a parameter given two decays, a NaN decay or an
    infinite rate (every weight NaN at the first update; --opt's 1e999 compiled, an inf rate), a LookAhead alpha
    above 1: one line each, nothing written."""
    forward, out = files / "attrs" / "forward.pb", tmp_path / "x.pb"
    cases = {("--optimizer", "sgd", "--no-clip", "linear_1.b_0"): "--no-clip: only with --clip-global-norm",
             ("--optimizer", "sgd", "--clip-norm", "1", "--no-clip", "linear_9*"):
                 "--no-clip linear_9*: no parameter's name matches linear_9* (did you mean linear_1.w_0?)",
             ("--optimizer", "sgd", "--param-l1", "linear_0.*=0.1", "--param-l2", "*.w_0=0.1"):
                 "--param-l2: linear_0.w_0 matches two decays, L1Decay(0.1) and L2Decay(0.1)",
             ("--param-l2", "*.w_0=0.1"): "--param-l2: only with --optimizer",
             ("--optimizer", "sgd", "--param-l1", "linear_0.w_0"): "--param-l1 takes GLOB=C",
             ("--optimizer", "sgd", "--param-l2", "*.w_0=nan"): "--param-l2 takes GLOB=C (a finite number), not",
             ("--optimizer", "sgd", "--param-lr", "*.w_0=inf"): "--param-lr takes GLOB=RATE (a finite number), not",
             ("--optimizer", "adam", "--opt", "learning_rate=1e999"):
                 "--opt learning_rate=1e999: 1e999 is not a finite number",
             ("--optimizer", "adamw", "--opt", "weight_decay=-1e999"):
                 "--opt weight_decay=-1e999: -1e999 is not a finite number",
             ("--optimizer", "adam", "--lookahead", "2,1.5"): "--lookahead takes K[,ALPHA]: K >= 1 steps",
             ("--lookahead", "2"): "--lookahead: only with --optimizer"}
    for options, message in cases.items():
        run = gradc_cli("compile", forward, "-o", out, *options)
        assert run.returncode == 1 and message in run.stderr and run.stderr.count("\n") == 1, (options, run.stderr)
        assert not out.exists()


@pytest.mark.parametrize("options", [("--l1", "nan"), ("--l2", "inf"), ("--l2", "-inf"), ("--weight-decay", "nan"),
                                     ("--lr", "inf"), ("--clip-global-norm", "nan")])
def test_a_global_decay_rate_or_clip_that_is_not_finite_is_refused(files, tmp_path, options):
    """Fault: --l1/--l2 nan or inf compiled (every weight NaN at the first update) where --param-l1/-l2 refused them:
    one usage line naming the option, nothing written."""
    out = tmp_path / "x.pb"
    run = gradc_cli("compile", files / "attrs" / "forward.pb", "-o", out, "--optimizer", "sgd", *options)
    assert run.returncode == 2 and run.stderr.count("\n") == 1, run.stderr
    assert f"Invalid value for '{options[0]}': '{options[1]}' is not a finite number" in run.stderr
    assert not out.exists()


@pytest.mark.parametrize("spec, message", [
    ("LambdaDecay(0.1, lambda epoch: __import__('os').getcwd())", "not '__import__('os').getcwd()'"),
    ("LambdaDecay(0.1, 0.5)", "lr_lambda is a function of the epoch"),
    ("LambdaDecay(0.1, lambda a, b: a)", "takes the epoch, one argument"),
    ("MultiplicativeDecay(0.1, lambda e: 1 / (e - 2))", "at epoch 2: division by zero"),
    ("LambdaDecay(0.1, lambda e: 10 ** 10 ** 10)", "(34, 'Numerical result out of range')"),
    ("LambdaDecay(0.1, lambda e: 1e308 * 10)", "the learning rate inf is not a finite number"),
])
def test_a_schedules_lambda_is_read_never_run(files, spec, message):
    """The lambda is evaluated on its syntax tree: a call outside arithmetic and math's functions is refused, as are
    a value that is no function, two arguments, and a step that divides by zero or overflows (named by its epoch; a
    power is taken in floats, so that a huge one fails at once instead of computing a 10-billion-digit integer)."""
    case = "sgd_lambda"
    run = gradc_cli("train", files / case / "train.pb", "--startup", files / case / "startup.pb", "--params",
                    files / "mlp" / "init.npz", "--data", files / "mlp" / "data.npz", "--batch-size", 8,
                    "--lr-schedule", spec)
    assert run.returncode == 1 and message in run.stderr and "Traceback" not in run.stderr, run.stderr


@pytest.mark.parametrize("case, stop", [("adam_one_cycle", 3), ("sgd_plateau", 5), ("sgd_multiplicative", 2),
                                        ("lookahead", 3)])
def test_resuming_mid_schedule_gives_paddles_remaining_losses(files, case, stop, tmp_path):
    """A run stopped after `stop` steps (OneCycleLR mid-way, ReduceOnPlateau mid-epoch in its cooldown's epoch,
    MultiplicativeDecay, LookAhead between two syncs) and resumed from its checkpoint: the Adam moments, beta pows,
    LookAhead's step and slow weights and the schedule's place (the plateau's best, bad epochs and cooldown replayed
    from the history) carry over, the later losses are Paddle's."""
    program, startup, checkpoints = files / case / "train.pb", files / case / "startup.pb", tmp_path / "ck"
    first, _ = _train(files, case, program, startup, "--checkpoint-dir", checkpoints, "--checkpoint-every", stop,
                      "--steps", stop)
    rest, trained = _train(files, case, program, startup, "--resume", checkpoints)
    assert len(first) == stop
    _agrees(files, case, first + rest, trained)


def test_exponential_moving_average_is_paddles(files, tmp_path):
    """paddle.static.ExponentialMovingAverage(0.9)'s update ops in Paddle's program, gradc train --save-ema: the
    averages Paddle's ema.apply() gives (bias-corrected by the step counter) to 4e-8."""
    case, averaged = "ema", tmp_path / "ema.npz"
    run = gradc_cli("train", files / case / "train.pb", "--startup", files / case / "startup.pb", "--params",
                    files / "mlp" / "init.npz", "--data", files / "mlp" / "data.npz", "--batch-size", 8,
                    "--save-ema", averaged)
    assert run.returncode == 0, run.stderr
    paddle, gradc = np.load(files / case / "ema.npz"), np.load(averaged)
    for name in paddle.files:
        np.testing.assert_allclose(gradc[name], paddle[name], rtol=0, atol=1e-7, err_msg=name)


def test_a_schedule_the_program_computes_drives_gradcs_updates_with_lr_var(files, tmp_path):
    """A forward program holding lr.exponential_decay's ops after its loss (a Paddle 2.x script's; Paddle 2's
    Adam(learning_rate=<that Variable>)): gradc compile --optimizer adam --lr-var tmp_3, trained with the program's
    startup (its step counter) and gradc's, gives Paddle's 6 losses at the rates 0.1, 0.1, 0.05, ... to 9e-8. Fault:
    no option took the program's rate, and compile silently updated at --lr 0.01 while the schedule's ops ran unread;
    now --lr-var, and a warning naming the unread rate without it."""
    case, out = "program_rate", tmp_path / "compiled.pb"
    rate = META[case]["rate"]
    compiled = gradc_cli("compile", files / case / "forward.pb", "-o", out, "--optimizer", "adam", "--lr-var", rate)
    assert compiled.returncode == 0 and "warning" not in compiled.stderr, compiled.stderr
    assert "initialises accumulators" in compiled.stdout + compiled.stderr
    losses, trained = _train(files, case, out, files / case / "startup.pb", "--startup",
                             tmp_path / "compiled.startup.pb")
    _agrees(files, case, losses, trained)
    unread = gradc_cli("compile", files / case / "forward.pb", "-o", tmp_path / "plain.pb", "--optimizer", "adam")
    assert (f"the program computes a learning rate with ops of its own ({rate}, op_role LRSched) that the updates "
            f"would not read: give --lr-var NAME" in unread.stderr), unread.stderr
    assert "a metric" not in unread.stderr   # the rate, written last, is neither the loss nor a metric
    for options, message in [(("--lr-var", "x"), "a learning rate is a float32 or float64 var of one element, not "
                                                 "float32[-1, 6]"),
                             (("--lr-var", rate, "--lr", "0.1"), "give no --lr, --lr-schedule or --warmup-steps")]:
        refused = gradc_cli("compile", files / case / "forward.pb", "-o", tmp_path / "x.pb", "--optimizer", "sgd",
                            *options)
        assert refused.returncode == 1 and message in refused.stderr, refused.stderr


@pytest.mark.parametrize("name", json.loads((WEEK / "lr_programs.json").read_text()))
def test_paddles_learning_rate_programs_give_its_rates(files, name):
    """paddle.optimizer.lr's exponential_decay (staircase), natural_exp_decay, inverse_time_decay, polynomial_decay
    (cycle), piecewise_decay, cosine_decay, linear_lr_warmup (a conditional block) and noam_decay, which write the
    schedule as ops: run 7 times by gradc's executor from their startups, Paddle's 7 rates to 7.5e-9."""
    import gradc

    expected = json.loads((WEEK / "lr_programs.json").read_text())[name]
    scope, executor = gradc.Scope(), gradc.Executor()
    executor.run(gradc.load(files / f"lr_{name}.startup.pb"), scope=scope)
    program = gradc.load(files / f"lr_{name}.pb")
    rates = [float(np.asarray(executor.run(program, fetch_list=[expected["var"]], scope=scope)[0]).reshape(-1)[0])
             for _ in range(7)]
    np.testing.assert_allclose(rates, expected["rates"], rtol=1e-7, atol=1e-9)


def test_info_calls_a_schedules_ops_no_training_program(files):
    """gradc info of linear_lr_warmup's program and of the forward holding exponential_decay's ops. Fault: both were
    'training program (0 backward, N optimizer ops)', the warm-up's 'in a conditional block: an update every k_steps
    runs' (gradient merge's), and the warm-up's rate its loss; now a forward program whose LRSched ops compute a
    schedule no optimizer op reads, and no loss for the schedule alone."""
    warmup = gradc_cli("info", files / "lr_warmup.pb")
    assert warmup.returncode == 0, warmup.stderr
    assert "training program" not in warmup.stdout and "k_steps" not in warmup.stdout
    assert "20 ops compute a learning-rate schedule (op_role LRSched), which no optimizer op reads" in warmup.stdout
    assert "loss: none" in warmup.stdout
    forward = gradc_cli("info", files / "program_rate" / "forward.pb").stdout
    assert "forward program: gradc compile appends its backward; 7 ops compute a learning-rate schedule" in forward
    assert "loss: mean_0.tmp_0" in forward
