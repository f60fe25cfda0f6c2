"""The multi-task learning researcher's programs of docs/tools.md's 'A multi-task learning researcher's week', written
with Paddle 3.3.1's layers in legacy static mode (FLAGS_enable_pir_api=0). One shared trunk, three task heads on
x [N, 6]: a 3-class classification (cross_entropy), a regression (smooth_l1_loss, delta 1), a 4-label multi-label
head (binary_cross_entropy_with_logits with pos_weight); each task's per-sample loss multiplied by its mask and
divided by max(sum(mask), 1) (step 3's batch has no regression labels: an empty mask).

- fixed: the MLP trunk (Linear-ReLU-Linear-ReLU), loss = 1.0 cls + 0.5 reg + 0.3 multi-label; the task losses fetched.
- uncertainty: the same heads, loss = sum_i exp(-log_var_i) * L_i + log_var_i, log_var a [3] parameter.
- gradnorm: task weights a [3] parameter; the gradient norm of each weighted task loss w.r.t. the trunk's last weight
  by paddle.static.gradients inside the forward program; loss = sum w_i L_i + 0.1 sum |G_i - mean(G)|: minimize
  differentiates through the gradients (double backward).
- gradnorm2: the same, trained as the paper does: Adam(0.01) of sum w_i L_i over the network, Adam(0.025) of the
  GradNorm term over the task weights alone (two minimize() calls, parameters= each); both losses per step.
- mmoe: three expert MLPs on x, a softmax gate per task (Linear over x), each task's tower on its gated mixture; the
  classification and regression tasks.
  All: Adam(0.01), 6 steps of 8 samples; forward.pb (main.clone() before minimize), train.pb (Paddle's own),
  startup.pb, init.npz, trained.npz, outputs.npz (first batch, trained weights); data.npz shared; losses in meta.json.
- pcgrad.npz: on fixed's forward program and initial weights, the first batch's per-task gradients of the trunk's
  parameters (paddle.static.gradients of each task loss), and the PCGrad-projected sum (each task's gradient
  projected off each other task's where they conflict, in task order).
- empty_mean.pb / .npz: float64 loss = mean(masked_select(x, mask)) with an all-false mask, Paddle's loss and grad.
- mmoe_pir.json / .pdiparams (PIR half, a second interpreter): the MMoE built in PIR static mode, save_inference_model'd
  with mmoe's trained weights; predictor_pir.npz: the Predictor's (oneDNN off) outputs on the first batch.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week48.py tests/data/paddle/user_week48
"""

import json
from pathlib import Path

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle_programs import (
    gzip_file,
    legacy_persistables,
    minimized,
    pir_half,
    script_main,
    train_saving_values,
    without_callstacks,
    write_gz,
    write_programs_gz,
)

BATCH, STEPS, FEATURES, HIDDEN, CLASSES, LABELS, EXPERTS = 8, 6, 6, 10, 3, 4, 3
RNG = np.random.default_rng(48)


def data() -> dict:
    count = BATCH * STEPS
    x = RNG.normal(size=(count, FEATURES)).astype(np.float32)
    cls = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0.5)
    reg = (x[:, 2] * 2 + x[:, 3] ** 2 + RNG.normal(size=count) * 0.1).astype(np.float32)
    labels = (x[:, :LABELS] + RNG.normal(size=(count, LABELS)) * 0.5 > 0.3).astype(np.float32)
    masks = (RNG.random(size=(count, 3)) > 0.3).astype(np.float32)
    masks[3 * BATCH:4 * BATCH, 1] = 0.0  # step 3: no regression labels at all
    return {"x": x, "cls": cls.reshape(-1, 1), "reg": reg.reshape(-1, 1), "labels": labels,
            "m_cls": masks[:, :1].copy(), "m_reg": masks[:, 1:2].copy(), "m_ml": masks[:, 2:].copy()}


def masked_mean(per_sample, mask):
    """The mean over the labelled samples; 0 when none is labelled."""
    return paddle.sum(per_sample * mask) / paddle.maximum(paddle.sum(mask), paddle.full([], 1.0))


def inputs():
    feeds = {"x": paddle.static.data("x", [-1, FEATURES], "float32"),
             "cls": paddle.static.data("cls", [-1, 1], "int64"),
             "reg": paddle.static.data("reg", [-1, 1], "float32"),
             "labels": paddle.static.data("labels", [-1, LABELS], "float32")}
    for task in ("m_cls", "m_reg", "m_ml"):
        feeds[task] = paddle.static.data(task, [-1, 1], "float32")
    return feeds


def elementary_task_losses(f, cls_logits, reg_out, ml_logits):
    """Losses Paddle 3.3.1 can differentiate twice in legacy mode (softmax_with_cross_entropy_grad, log_softmax_grad
    have no grad; exp's composite double grad crashes it): a Brier score of sigmoid(logits) to the one-hot class,
    a squared error, a Brier score of the label probabilities."""
    one_hot = F.one_hot(paddle.squeeze(f["cls"], -1), CLASSES)
    cls = masked_mean(paddle.sum(paddle.square(F.sigmoid(cls_logits) - one_hot), axis=1, keepdim=True), f["m_cls"])
    reg = masked_mean(paddle.square(reg_out - f["reg"]), f["m_reg"])
    ml_each = paddle.square(F.sigmoid(ml_logits) - f["labels"])
    ml = masked_mean(paddle.mean(ml_each, axis=1, keepdim=True), f["m_ml"])
    return cls, reg, ml


def task_losses(f, cls_logits, reg_out, ml_logits):
    pos_weight = paddle.to_tensor(np.array([2.0, 1.0, 0.5, 3.0], dtype=np.float32))
    cls = masked_mean(F.cross_entropy(cls_logits, f["cls"], reduction="none"), f["m_cls"])
    reg = masked_mean(F.smooth_l1_loss(reg_out, f["reg"], reduction="none", delta=1.0), f["m_reg"])
    ml_each = F.binary_cross_entropy_with_logits(ml_logits, f["labels"], reduction="none", pos_weight=pos_weight)
    ml = masked_mean(paddle.mean(ml_each, axis=1, keepdim=True), f["m_ml"])
    return cls, reg, ml


def hard_sharing(variant: str):
    f = inputs()
    first, last = nn.Linear(FEATURES, HIDDEN), nn.Linear(HIDDEN, HIDDEN)
    shared = F.relu(last(F.relu(first(f["x"]))))
    heads = nn.Linear(HIDDEN, CLASSES)(shared), nn.Linear(HIDDEN, 1)(shared), nn.Linear(HIDDEN, LABELS)(shared)
    cls, reg, ml = (elementary_task_losses if variant == "gradnorm" else task_losses)(f, *heads)
    stacked = paddle.stack([cls, reg, ml])
    names = {"cls_loss": cls.name, "reg_loss": reg.name, "ml_loss": ml.name, "cls_logits": heads[0].name,
             "reg_out": heads[1].name, "ml_logits": heads[2].name}
    if variant == "fixed":
        loss = 1.0 * cls + 0.5 * reg + 0.3 * ml
    elif variant == "uncertainty":
        log_var = paddle.create_parameter([3], "float32", "log_var", default_initializer=nn.initializer.Constant(0.0))
        loss = paddle.sum(paddle.exp(-log_var) * stacked + log_var)
    else:
        weights = paddle.create_parameter([3], "float32", "task_weights",
                                          default_initializer=nn.initializer.Constant(1.0))
        weighted = weights * stacked
        norms = []
        for task in range(3):
            (grad,) = paddle.static.gradients(weighted[task], last.weight)
            norms.append(paddle.sqrt(paddle.sum(paddle.square(grad)) + 1e-8))  # a task without labels: norm 0
        norms = paddle.stack(norms)
        target = paddle.mean(norms)
        target.stop_gradient = True
        gradnorm = paddle.sum(paddle.abs(norms - target))
        weighted_sum = paddle.sum(weighted)
        loss = weighted_sum + 0.1 * gradnorm
        names.update(grad_norms=norms.name, weighted_loss=weighted_sum.name, gradnorm_loss=gradnorm.name)
    return loss, names, [first.weight, first.bias, last.weight, last.bias]


def mmoe():
    f = inputs()
    experts = [nn.Sequential(nn.Linear(FEATURES, HIDDEN), nn.ReLU())(f["x"]) for _ in range(EXPERTS)]
    stacked = paddle.stack(experts, axis=1)  # [N, E, H]
    mixtures = []
    for _ in range(2):
        gate = F.softmax(nn.Linear(FEATURES, EXPERTS)(f["x"]), axis=-1)
        mixtures.append(paddle.sum(stacked * gate.unsqueeze(-1), axis=1))
    cls_logits = nn.Linear(8, CLASSES)(F.relu(nn.Linear(HIDDEN, 8)(mixtures[0])))
    reg_out = nn.Linear(HIDDEN, 1)(F.relu(nn.Linear(HIDDEN, HIDDEN)(mixtures[1])))
    cls = masked_mean(F.cross_entropy(cls_logits, f["cls"], reduction="none"), f["m_cls"])
    reg = masked_mean(F.smooth_l1_loss(reg_out, f["reg"], reduction="none", delta=1.0), f["m_reg"])
    loss = cls + 0.5 * reg
    return loss, {"cls_loss": cls, "reg_loss": reg, "cls_logits": cls_logits, "reg_out": reg_out}, []


def train_model(out: Path, name: str, exe, batches: dict) -> dict:
    # no program random_seed: with one, every initializer draws from the same seed, and MMoE's same-shaped experts
    # and gates start identical (their gates' gradients then 0 but for rounding); init.npz keeps the draws
    main, startup, forward, optimizer, (loss, names, trunk) = minimized(
        lambda: mmoe() if name == "mmoe" else hard_sharing(name), lambda: paddle.optimizer.Adam(0.01))
    names = {key: value if isinstance(value, str) else value.name for key, value in names.items()}
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    scope, losses = train_saving_values(exe, folder, (forward, main, startup), loss, batches, STEPS, BATCH, optimizer)
    with paddle.static.scope_guard(scope):
        first = {k: v[:BATCH] for k, v in batches.items()}
        outputs = exe.run(forward, feed=first, fetch_list=list(names.values()))
    np.savez(folder / "outputs.npz", **dict(zip(names, outputs)))
    write_programs_gz(folder, {"forward": forward, "train": main, "startup": startup})
    if name == "fixed":
        pcgrad(out, forward, names, [p.name for p in trunk], folder / "init.npz", first, exe)
    return {**names, "loss": loss.name, "losses": losses}


def gradnorm_two_optimizers(out: Path, exe, batches: dict) -> dict:
    """GradNorm as its paper trains it: Adam(0.01) of the weighted sum over the network's parameters, and a second
    Adam(0.025) of the GradNorm loss over the task weights alone, two minimize() calls in one program."""
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        _, names, _ = hard_sharing("gradnorm")
        forward = main.clone()
        block = main.global_block()
        weights = block.var("task_weights")
        network = [p for p in main.all_parameters() if p.name != "task_weights"]
        weighted, gradnorm = block.var(names["weighted_loss"]), block.var(names["gradnorm_loss"])
        first = paddle.optimizer.Adam(0.01, parameters=network)
        first.minimize(weighted)
        second = paddle.optimizer.Adam(0.025, parameters=[weights])
        second.minimize(gradnorm)
    folder = out / "gradnorm2"
    folder.mkdir(parents=True, exist_ok=True)
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        np.savez(folder / "init.npz", **legacy_persistables(forward, scope))
        losses = []
        for step in range(STEPS):
            feed = {k: v[step * BATCH:(step + 1) * BATCH] for k, v in batches.items()}
            values = exe.run(main, feed=feed, fetch_list=[weighted, gradnorm])
            losses.append([float(v) for v in values])
        np.savez(folder / "trained.npz", **legacy_persistables(forward, scope))
    write_programs_gz(folder, {"forward": forward, "train": main, "startup": startup})
    return {**names, "losses": losses}


def projected(grads: list) -> np.ndarray:
    """PCGrad: each task's flat gradient projected off every other task's it conflicts with, then summed."""
    result = []
    for i, g in enumerate(grads):
        g = g.copy()
        for j, other in enumerate(grads):
            dot = float(g @ other)
            if j != i and dot < 0:
                g -= dot / float(other @ other) * other
        result.append(g)
    return np.sum(result, axis=0)


def pcgrad(out: Path, forward, names: dict, trunk: list, init: Path, feed: dict, exe) -> None:
    program = forward.clone()
    block = program.global_block()
    params = [block.var(n) for n in trunk]
    targets = [block.var(names[k]) for k in ("cls_loss", "reg_loss", "ml_loss")]
    with paddle.static.program_guard(program):
        grads = [paddle.static.gradients(t, params) for t in targets]
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        for key, value in np.load(init).items():
            scope.var(key).get_tensor().set(value, paddle.CPUPlace())
        fetched = exe.run(program, feed=feed, fetch_list=[g for task in grads for g in task])
    per_task = [fetched[i * len(params):(i + 1) * len(params)] for i in range(3)]
    flat = [np.concatenate([g.ravel() for g in task]).astype(np.float64) for task in per_task]
    result = {f"{task}_{n}": g for task, values in zip(("cls", "reg", "ml"), per_task) for n, g in zip(trunk, values)}
    np.savez(out / "pcgrad.npz", projected=projected(flat), **result)


def empty_mean(out: Path, exe) -> None:
    """float64 mean(masked_select(x, mask)) with no element selected: Paddle's loss and gradient."""
    x = RNG.normal(size=(4, 1))
    main = paddle.static.Program()
    with paddle.static.program_guard(main, paddle.static.Program()):
        xv = paddle.static.data("x", [4, 1], "float64")
        xv.stop_gradient = False
        mask = paddle.static.data("mask", [4, 1], "bool")
        loss = paddle.mean(paddle.masked_select(xv, mask))
        forward = main.clone()
        (grad,) = paddle.static.gradients(loss, xv)
    mask_value = np.zeros((4, 1), dtype=bool)
    value, gradient = exe.run(main, feed={"x": x, "mask": mask_value}, fetch_list=[loss, grad])
    write_gz(out / "empty_mean.pb", without_callstacks(forward))
    np.savez(out / "empty_mean.npz", x=x, mask=mask_value, loss=value, grad=gradient)


def fused_gradnorm(out: Path) -> None:
    """GradNorm over F.cross_entropy, smooth_l1_loss and BCE with pos_weight: Paddle's minimize refuses it (no grad of
    softmax_with_cross_entropy_grad); the forward program kept."""
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 48
    with paddle.static.program_guard(main, startup):
        loss, _, _ = hard_sharing("gradnorm_fused")
        forward = main.clone()
        try:
            paddle.optimizer.Adam(0.01).minimize(loss)
        except RuntimeError as refusal:
            print("Paddle refuses the fused GradNorm:", str(refusal).splitlines()[0])
    write_gz(out / "gradnorm_fused.pb", without_callstacks(forward))
    write_gz(out / "gradnorm_fused_startup.pb", without_callstacks(startup))


def main(out: Path) -> None:
    import paddle_legacy_shim
    paddle_legacy_shim.install()
    paddle.enable_static()
    paddle.seed(48)   # the initializers draw from the global generator, each its own values (no program seed)
    exe = paddle.static.Executor(paddle.CPUPlace())
    batches = data()
    np.savez_compressed(out / "data.npz", **batches)
    meta = {name: train_model(out, name, exe, batches) for name in ("fixed", "uncertainty", "gradnorm", "mmoe")}
    meta["gradnorm2"] = gradnorm_two_optimizers(out, exe, batches)
    empty_mean(out, exe)
    fused_gradnorm(out)
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    pir_half(__file__, out)


def main_pir(out: Path) -> None:
    """The MMoE built again in PIR static mode with mmoe's trained weights, saved by save_inference_model (x in; the
    classification logits and the regression out), the Predictor's outputs on the first batch."""
    paddle.enable_static()
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        _, values, _ = mmoe()
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    trained = np.load(out / "mmoe" / "trained.npz")
    params = [op.attrs()["parameter_name"] for op in main.global_block().ops if op.name() == "builtin.parameter"]
    first_layer = min(int(name.split(".")[0].split("_")[1]) for name in trained.files if name.startswith("linear_"))
    scope = paddle.static.global_scope()
    for name in params:  # the same layers, numbered from 0 in this interpreter
        layer, suffix = name.split(".")
        legacy = f"linear_{int(layer.split('_')[1]) + first_layer}.{suffix}"
        scope.find_var(name).get_tensor().set(trained[legacy], paddle.CPUPlace())
    x = next(op.result(0) for op in main.global_block().ops if op.name() == "pd_op.data" and op.attrs()["name"] == "x")
    paddle.static.save_inference_model(str(out / "mmoe_pir"), [x], [values["cls_logits"], values["reg_out"]], exe,
                                       program=main)
    exported = out / "mmoe_pir.json"
    config = paddle.inference.Config(str(exported), str(out / "mmoe_pir.pdiparams"))
    config.disable_mkldnn()
    predictor = paddle.inference.create_predictor(config)
    predictor.get_input_handle("x").copy_from_cpu(np.load(out / "data.npz")["x"][:BATCH])
    predictor.run()
    predicted = [predictor.get_output_handle(name).copy_to_cpu() for name in predictor.get_output_names()]
    gzip_file(exported)
    np.savez(out / "predictor_pir.npz", cls_logits=predicted[0], reg_out=predicted[1])


if __name__ == "__main__":
    script_main(main, main_pir)
