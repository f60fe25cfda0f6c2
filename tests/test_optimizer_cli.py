"""`gradc compile --optimizer NAME` with Paddle's arguments (--opt), --lr or --lr-schedule, clipping and L1/L2
options writes the optimize ops and startup initialisers Paddle's minimize wrote for the same settings."""

import pytest

import gradc
from optim_cases import DATA, OptimCase
from test_optimizer_errors import cli
from test_optimizer_pass_vs_paddle import Matcher, optimize_ops, startup_fills

OPTIONS = {
    "mlp_clip_global_norm": ["--optimizer", "sgd", "--lr", "0.1", "--clip-global-norm", "0.7"],
    "cnn_clip_value": ["--optimizer", "sgd", "--lr", "0.1", "--clip-value", "0.05"],
    "mlp_clip_norm": ["--optimizer", "sgd", "--lr", "0.1", "--clip-norm", "0.2"],
    "mlp_momentum_nesterov_l2": ["--optimizer", "momentum", "--lr", "0.05", "--opt", "momentum=0.8",
                                 "--opt", "use_nesterov=True", "--l2", "0.01"],
    "cnn_l1_decay": ["--optimizer", "momentum", "--lr", "0.05", "--l1", "0.01"],
    "mlp_l2_decay": ["--optimizer", "sgd", "--lr", "0.1", "--l2", "0.02"],
    "mlp_adam": ["--optimizer", "adam", "--opt", "beta1=0.85", "--opt", "beta2=0.99", "--opt", "epsilon=1e-6"],
    "cnn_merged_momentum": ["--optimizer", "merged_momentum", "--lr", "0.05"],
    "mlp_lars_momentum": ["--optimizer", "lars_momentum", "--lr", "0.1", "--opt", "lars_coeff=0.01",
                          "--opt", "lars_weight_decay=0.001", "--opt", "exclude_from_weight_decay=['b_0']",
                          "--opt", "epsilon=1e-6", "--opt", "rescale_grad=0.5"],
    "mlp_rprop": ["--optimizer", "rprop", "--opt", "learning_rate_range=(1e-4, 0.05)"],
    "linear_lr_NoamDecay": ["--optimizer", "sgd", "--lr-schedule", "NoamDecay(d_model=16, warmup_steps=3)"],
}


@pytest.mark.parametrize("name", OPTIONS)
def test_compile_options_write_paddles_program(name, tmp_path, capsys, monkeypatch):
    case = OptimCase(name)
    code, err = cli(capsys, monkeypatch, "compile", DATA / case.meta["forward"], "-o", tmp_path / "train.pb",
                    "--loss", case.meta["loss"], *OPTIONS[name])
    assert code == 0, err
    program, startup = gradc.load(tmp_path / "train.pb"), gradc.load(tmp_path / "train.startup.pb")
    ours, theirs = optimize_ops(program), optimize_ops(case.program())
    assert [op.type for op in ours] == [op.type for op in theirs]
    matcher = Matcher(program, case.program())
    for index, (a, b) in enumerate(zip(ours, theirs)):
        matcher.op(a, b, f"{name}: optimize op {index}")
    assert startup_fills(case, startup) == startup_fills(case, case.program("startup"))
