"""The anomaly-detection and continual-learning engineer's programs of docs/tools.md's 'An anomaly-detection
engineer's week', written with Paddle 3.3.1's layers in legacy static mode (FLAGS_enable_pir_api=0):

- dense: an autoencoder 16-8-4-8-16 (tanh) on "normal" points near a 4-dimensional subspace, F.mse_loss; the anomaly
  score of an example the mean over features of F.mse_loss(reduction='none'); Adam(0.01).
- conv: a convolutional autoencoder of 8x8 images (Conv2D stride 2, BatchNorm2D, ReLU, Conv2DTranspose back to 8x8),
  F.mse_loss, the same per-example score; Momentum(0.05, 0.9).
- svdd_fed / svdd_param: Deep SVDD, a bias-free encoder 16-8-4 (leaky ReLU) pulled to a fixed center: fed as data
  (`center`, [4], center.npz), or held as a parameter with trainable=False (an Assign initializer); the score
  sum((z - c)^2); Adam(0.01).
- gradpen: an autoencoder 16-8-16 whose loss adds 0.1 x the mean squared norm of the input gradient of its
  reconstruction error (paddle.static.gradients in the forward program: a second-order training); Momentum(0.05,
  0.9); plain.pb its program before the gradients, for gradc's own penalty.
- ewc: the dense autoencoder trained on task B (points near another subspace) with 50 sum F (w - w_old)^2 over every
  weight, F (the per-example Fisher diagonal of the trained dense model: the mean over 32 task-A examples of each
  example's squared gradient of its Gaussian log-likelihood, -sum of squared errors / 2) and w_old held as
  persistable vars that do not train (create_parameter(trainable=False)), loaded with the weights; Adam(0.01).

Each model: forward.pb (main.clone() before minimize), train.pb (Paddle's own), startup.pb, init.npz, data.npz,
trained.npz, test.npz (24 normal and 8 anomalous examples, `label` 1 for an anomaly), scores.npz (Paddle's scores of
test.npz with the trained weights); losses and AUCs in meta.json; fisher.npz (Paddle's per-example Fisher).
Programs are written with the ops' stack traces removed in place (a parse, as paddle_programs.without_callstacks
makes, would make the frozen center and EWC vars trainable again). PIR half: dense_pir_train.json /
dense_pir_startup.json, dense_pir_init.npz and pir_losses.json: the dense autoencoder minimized in PIR mode.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week51.py tests/data/paddle/user_week51
"""

import json
from pathlib import Path

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle_programs import legacy_persistables, pir_half, pir_minimized, script_main, write_gz

FEATURES, CODE, STEPS, BATCH, SIDE, EWC_LAMBDA, PENALTY = 16, 4, 5, 8, 8, 50.0, 0.1
RNG = np.random.default_rng(51)
BASIS = {task: RNG.normal(size=(CODE, FEATURES)) / 2 for task in "AB"}
CENTER = RNG.normal(size=CODE).astype(np.float32) * 0.5


def stripped(program) -> bytes:
    """The program's bytes less the ops' stack traces, removed in place: Paddle's parse (without_callstacks) makes
    every parameter trainable again, and the frozen center and EWC vars must stay frozen."""
    for block in program.blocks:
        for op in block.ops:
            if op.desc.has_attr("op_callstack"):
                op.desc.remove_attr("op_callstack")
    return program.desc.serialize_to_string()


def points(count: int, task: str = "A", anomalies: int = 0) -> np.ndarray:
    normal = RNG.normal(size=(count, CODE)) @ BASIS[task] + 0.05 * RNG.normal(size=(count, FEATURES))
    odd = RNG.uniform(-3, 3, size=(anomalies, FEATURES))
    return np.concatenate([normal, odd]).astype(np.float32)


def images(count: int, anomalies: int = 0) -> np.ndarray:
    """8x8 images of a bright bar at a random row (normal) or of noise (anomalous), [N, 1, 8, 8]."""
    out = np.zeros((count + anomalies, 1, SIDE, SIDE), np.float32)
    for row, at in enumerate(RNG.integers(1, SIDE - 1, size=count)):
        out[row, 0, at] = 1.0
        out[row, 0, at - 1] = out[row, 0, at + 1] = 0.5
    out[count:] = RNG.uniform(0, 1, size=(anomalies, 1, SIDE, SIDE))
    return out + 0.02 * RNG.normal(size=out.shape).astype(np.float32)


def per_example(recon, x):
    errors = F.mse_loss(recon, x, reduction="none")
    return paddle.mean(paddle.reshape(errors, [paddle.shape(x)[0], -1]), axis=1)


def autoencoder():
    return nn.Sequential(nn.Linear(FEATURES, 8), nn.Tanh(), nn.Linear(8, CODE), nn.Tanh(), nn.Linear(CODE, 8),
                         nn.Tanh(), nn.Linear(8, FEATURES))


def dense():
    x = paddle.static.data("x", [-1, FEATURES], "float32")
    recon = autoencoder()(x)
    return F.mse_loss(recon, x), {"score": per_example(recon, x).name, "recon": recon.name}


def conv():
    x = paddle.static.data("x", [-1, 1, SIDE, SIDE], "float32")
    hidden = F.relu(nn.BatchNorm2D(4)(nn.Conv2D(1, 4, 3, stride=2, padding=1)(x)))
    recon = nn.Conv2DTranspose(4, 1, 4, stride=2, padding=1)(hidden)
    return F.mse_loss(recon, x), {"score": per_example(recon, x).name, "recon": recon.name}


def svdd(center):
    x = paddle.static.data("x", [-1, FEATURES], "float32")
    encoder = nn.Sequential(nn.Linear(FEATURES, 8, bias_attr=False), nn.LeakyReLU(0.1),
                            nn.Linear(8, CODE, bias_attr=False))
    distance = paddle.sum(paddle.square(encoder(x) - center), axis=1)
    return paddle.mean(distance), {"score": distance.name}


def svdd_fed():
    return svdd(paddle.static.data("center", [CODE], "float32"))


def svdd_param():
    center = paddle.create_parameter([CODE], "float32", name="svdd_center", attr=paddle.ParamAttr(
        name="svdd_center", trainable=False, initializer=nn.initializer.Assign(CENTER)))
    return svdd(center)


def gradpen():
    x = paddle.static.data("x", [-1, FEATURES], "float32")
    x.stop_gradient = False
    recon = nn.Sequential(nn.Linear(FEATURES, 8), nn.Tanh(), nn.Linear(8, FEATURES))(x)
    error = F.mse_loss(recon, x)
    PLAIN["gradpen"] = paddle.static.default_main_program().clone()   # before the gradients: gradc adds the penalty
    (slope,) = paddle.static.gradients(error, x)
    penalty = paddle.mean(paddle.sum(paddle.square(slope), axis=1))
    return error + PENALTY * penalty, {"error": error.name, "penalty": penalty.name,
                                      "score": per_example(recon, x).name}


def ewc():
    loss, names = dense()
    penalty = []
    for param in paddle.static.default_main_program().all_parameters():
        frozen = {kind: paddle.create_parameter(param.shape, "float32", name=f"{kind}_{param.name}", attr=paddle.
                                                ParamAttr(name=f"{kind}_{param.name}", trainable=False))
                  for kind in ("fisher", "old")}
        penalty.append(paddle.sum(frozen["fisher"] * paddle.square(param - frozen["old"])))
    total = paddle.add_n(penalty)
    return loss + EWC_LAMBDA * total, {**names, "penalty": total.name}


PLAIN = {}   # a model's program without its penalty, for gradc's own second-order backward
MODELS = {"dense": dense, "conv": conv, "svdd_fed": svdd_fed, "svdd_param": svdd_param, "gradpen": gradpen,
          "ewc": ewc}
OPTIMIZERS = {"dense": lambda: paddle.optimizer.Adam(0.01), "conv": lambda: paddle.optimizer.Momentum(0.05, 0.9),
              "svdd_fed": lambda: paddle.optimizer.Adam(0.01), "svdd_param": lambda: paddle.optimizer.Adam(0.01),
              "gradpen": lambda: paddle.optimizer.Momentum(0.05, 0.9), "ewc": lambda: paddle.optimizer.Adam(0.01)}


def data(name: str) -> tuple[dict, dict]:
    """(training data, test data with `label`) of a model."""
    count = BATCH * STEPS
    if name == "conv":
        test = images(24, 8)
        return {"x": images(count)}, {"x": test, "label": (np.arange(32) >= 24).astype(np.int64)}
    train = {"x": points(count, "B" if name == "ewc" else "A")}
    test = {"x": points(24, "B" if name == "ewc" else "A", 8), "label": (np.arange(32) >= 24).astype(np.int64)}
    return train, test


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """ROC AUC: the share of (anomaly, normal) pairs the score orders, ties a half."""
    odd, normal = scores[labels == 1], scores[labels == 0]
    return float(np.mean((odd[:, None] > normal[None]) + 0.5 * (odd[:, None] == normal[None])))


def fisher(exe, trained: dict, out: Path) -> dict:
    """The per-example Fisher diagonal of the trained dense model: the mean over 32 task-A examples of each one's
    squared gradient of its Gaussian log-likelihood, -sum((recon - x)^2) / 2."""
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [1, FEATURES], "float32")
        recon = autoencoder()(x)
        log_likelihood = -0.5 * paddle.sum(paddle.square(recon - x))
        params = main.all_parameters()
        grads = paddle.static.gradients(log_likelihood, params)
    write_gz(out / "loglik.pb", stripped(main.clone()))
    scope = paddle.static.Scope()
    examples = points(32)
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        for name, value in trained.items():
            scope.var(name).get_tensor().set(value, paddle.CPUPlace())
        squares = [exe.run(main, feed={"x": row[None]}, fetch_list=grads) for row in examples]
    result = {p.name: np.mean([np.square(step[i]) for step in squares], axis=0) for i, p in enumerate(params)}
    np.savez(out / "fisher.npz", **result)
    np.savez(out / "fisher_data.npz", x=examples)
    return result


def train_model(out: Path, name: str, exe, preset: dict) -> dict:
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 51
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        loss, names = MODELS[name]()
        forward = main.clone()
        optimizer = OPTIMIZERS[name]()
        optimizer.minimize(loss)
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    train, test = data(name)
    fixed = {"center": CENTER} if name == "svdd_fed" else {}  # fed whole with every batch
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        for key, value in preset.items():
            scope.var(key).get_tensor().set(value, paddle.CPUPlace())
        np.savez(folder / "init.npz", **legacy_persistables(forward, scope))
        losses = [float(exe.run(main, feed={**fixed, **{k: v[step * BATCH:(step + 1) * BATCH] for k, v in
                                                        train.items()}}, fetch_list=[loss.name])[0])
                  for step in range(STEPS)]
        np.savez(folder / "trained.npz", **legacy_persistables(forward, scope))
        outputs = exe.run(forward.clone(for_test=True), feed={"x": test["x"], **fixed}, fetch_list=list(names.values()))
    np.savez_compressed(folder / "scores.npz", **dict(zip(names, outputs)))
    np.savez_compressed(folder / "data.npz", **train)
    np.savez_compressed(folder / "test.npz", **test)
    if fixed:
        np.savez(folder / "center.npz", **fixed)
    for program_name, program in [("forward", forward), ("train", main), ("startup", startup),
                                  *([("plain", PLAIN[name])] if name in PLAIN else [])]:
        write_gz(folder / f"{program_name}.pb", stripped(program))
    scores = dict(zip(names, outputs))["score"]
    return {**names, "loss": loss.name, "losses": losses, "auc": auc(scores, test["label"])}


def main(out: Path) -> None:
    import paddle_legacy_shim
    paddle_legacy_shim.install()
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    meta = {}
    for name in MODELS:
        preset = {}
        if name == "ewc":
            trained = dict(np.load(out / "dense" / "trained.npz"))
            importance = fisher(exe, trained, out)
            preset = {**trained, **{f"fisher_{k}": v for k, v in importance.items()},
                      **{f"old_{k}": v for k, v in trained.items()}}
        meta[name] = train_model(out, name, exe, preset)
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    pir_half(__file__, out)


def main_pir(out: Path) -> None:
    """The dense autoencoder minimized in PIR static mode: its programs, initial values and losses on the legacy
    run's data."""
    def dense_loss():
        x = paddle.static.data("x", [-1, FEATURES], "float32")
        return F.mse_loss(autoencoder()(x), x)

    main, startup, loss, _ = pir_minimized(out, "dense_", dense_loss, lambda: paddle.optimizer.Adam(0.01), 51)
    exe, scope = paddle.static.Executor(paddle.CPUPlace()), paddle.static.Scope()
    train = dict(np.load(out / "dense" / "data.npz"))
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        names = [op.attrs()["parameter_name"] for op in main.global_block().ops if op.name() == "builtin.parameter"]
        np.savez(out / "dense_pir_init.npz", **{key: np.array(scope.var(key).get_tensor()) for key in names})
        losses = [float(exe.run(main, feed={"x": train["x"][step * BATCH:(step + 1) * BATCH]}, fetch_list=[loss])[0])
                  for step in range(STEPS)]
    (out / "pir_losses.json").write_text(json.dumps({"dense": losses}, indent=1) + "\n")


if __name__ == "__main__":
    script_main(main, main_pir)
