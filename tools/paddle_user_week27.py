"""The model-compression engineer's programs of docs/tools.md's 'A model-compression engineer's week', written with
Paddle 3.3.1's layers in legacy static mode (FLAGS_enable_pir_api=0) on 8x8 one-channel images of 4 classes (the nets
in tools/paddle_user_week27_nets.py); each trained by Paddle's executor one epoch of 6 batches of 16:

- distill.pb: knowledge distillation. A teacher (8 channels) trained first by Paddle's Adam (5 epochs; its weights
  teacher.npz) is loaded into a frozen copy (trainable=False, outputs stop_gradient) beside a student (4 channels);
  loss = 0.5 CE + 0.5 T^2 KL(softmax(t/T) || softmax(s/T)) (F.kl_div of log-probabilities, batchmean, T = 4) + 0.1
  MSE of the student's features through a 1x1 Conv2D and the teacher's; Paddle's Adam (lr 0.01).
- dense.pb: an MLP (Linear 64-32, relu, Linear 32-4) trained by Adam 5 epochs (dense.npz). pruned.pb: the same with
  each weight times a fixed 0/1 magnitude mask (half of each weight zeroed, the masks persistable trainable=False
  parameters initialised in pruned_startup.pb), started from the dense weights times the masks (pruned_init.npz),
  trained by Momentum (0.05, 0.9, weight_decay 1e-3) and by AdamW (0.01, weight_decay 0.01).
- asp_train.pb: Paddle's own 2:4 sparsity (paddle.incubate.asp: decorate(Momentum), prune_model) of the dense MLP,
  the whole training program Paddle ran (its masks' multiplies after the updates), asp_init.npz the pruned start.
- lowrank.pb: fc1 replaced by its rank-8 SVD factors (two Linears; lowrank_init.npz), fine-tuned by Adam (0.01).
- dense/pruned/lowrank .pdmodel: each net's logits saved by save_inference_model from the trained weights and run by
  Paddle's Predictor (predictor.npz; meta.json has each .pdiparams' size).

Also meta.json: Paddle's losses per step, the op types of Paddle's distillation training program, and Paddle's
float64 gradients of the KL term against central differences.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week27.py tests/data/paddle/user_week27
"""

import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
import paddle_legacy_shim
import paddle_user_week27_nets as nets
from paddle.incubate import asp
from paddle_programs import without_callstacks, write_gz

EXAMPLES, BATCH, EPOCHS = 96, 16, 5
ALPHA, TEMPERATURE, BETA = 0.5, 4.0, 0.1
RNG = np.random.default_rng(27)


def images(count: int, templates: np.ndarray) -> dict:
    """Each class a random 8x8 template; an example its class's template plus noise."""
    label = RNG.integers(0, nets.CLASSES, (count, 1))
    image = templates[label[:, 0]] + 2.0 * RNG.standard_normal((count, 1, nets.SIDE, nets.SIDE))
    return {"image": image.astype(np.float32), "label": label.astype(np.int64)}


def batches(data: dict, epochs: int = 1):
    for _ in range(epochs):
        for start in range(0, EXAMPLES, BATCH):
            yield {key: value[start:start + BATCH] for key, value in data.items()}


def build(net, optimizer=None):
    """The forward program (cloned before minimize), the training program and the startup of `net(image, label)`,
    which returns a dict of outputs with the loss under "loss"."""
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 27
    with paddle.static.program_guard(main, startup):
        image = paddle.static.data("image", [-1, 1, nets.SIDE, nets.SIDE], "float32")
        label = paddle.static.data("label", [-1, 1], "int64")
        outputs = net(image, label)
        forward = main.clone()
        if optimizer is not None:
            optimizer().minimize(outputs["loss"])
    return forward, main, startup, {key: value.name for key, value in outputs.items()}


def classifier(layers):
    def net(image, label):
        logits = layers(image)
        return {"loss": F.cross_entropy(logits, label), "logits": logits}
    return net


def params_of(scope, program) -> dict:
    return {param.name: np.array(scope.var(param.name).get_tensor()) for param in
            program.global_block().all_parameters()}


def train(exe, main, startup, names, data, epochs=1, initial=None, fetch=("loss",), after_startup=None):
    """Run the startup, set `initial` in the scope, train; the fetched values per step and the scope."""
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        for name, value in (initial or {}).items():
            scope.var(name).get_tensor().set(value, paddle.CPUPlace())
        if after_startup:
            after_startup(scope)
        values = [exe.run(main, feed=feed, fetch_list=[names[key] for key in fetch]) for feed in batches(data, epochs)]
    return {key: [float(step[i]) for step in values] for i, key in enumerate(fetch)}, scope


def distillation(out: Path, exe, data: dict, meta: dict) -> None:
    _, main, startup, names = build(lambda image, label: (lambda t: {"loss": F.cross_entropy(t[1], label)})(
        nets.ConvNet("teacher", 8)(image)), lambda: paddle.optimizer.Adam(0.01))
    losses, scope = train(exe, main, startup, names, data, EPOCHS)
    teacher = params_of(scope, main)
    np.savez(out / "teacher.npz", **teacher)
    forward, main, startup, names = build(lambda image, label: nets.distill_net(image, label, ALPHA, TEMPERATURE, BETA),
                                          lambda: paddle.optimizer.Adam(0.01))
    fetched, scope = train(exe, main, startup, names, data, initial=teacher, fetch=("loss", "kl", "feature_mse"))
    assert all(np.array_equal(np.array(scope.var(name).get_tensor()), value) for name, value in teacher.items())
    np.savez(out / "distill_trained.npz", **{name: value for name, value in params_of(scope, main).items()
                                             if not name.startswith("teacher")})
    write_gz(out / "distill.pb", without_callstacks(forward))
    write_gz(out / "distill_startup.pb", without_callstacks(startup))
    meta["teacher"] = {"losses": losses["loss"]}
    meta["distill"] = {**names, "steps": fetched, "paddle_ops": [op.type for op in main.global_block().ops]}


def dense_and_pruned(out: Path, exe, data: dict, meta: dict) -> dict:
    forward, main, startup, names = build(classifier(nets.dense_layers), lambda: paddle.optimizer.Adam(0.01))
    losses, scope = train(exe, main, startup, names, data, EPOCHS)
    dense = params_of(scope, main)
    np.savez(out / "dense.npz", **dense)
    write_gz(out / "dense.pb", without_callstacks(forward))
    meta["dense"] = {**names, "losses": losses["loss"]}
    masks = nets.magnitude_masks(dense, 0.5)
    initial = {name: value * masks[name] if name in masks else value for name, value in dense.items()}
    np.savez(out / "pruned_init.npz", **initial)
    trained = {}
    for optimizer, make in (("momentum", lambda: paddle.optimizer.Momentum(0.05, 0.9, weight_decay=1e-3)),
                            ("adamw", lambda: paddle.optimizer.AdamW(0.01, weight_decay=0.01))):
        forward, main, startup, names = build(classifier(lambda x: nets.dense_layers(x, masks)), make)
        losses, scope = train(exe, main, startup, names, data, initial=initial)
        trained[optimizer] = params_of(scope, main)
        assert all((trained[optimizer][name][masks[name] == 0] == 0).all() for name in masks)
        meta[f"pruned_{optimizer}"] = {**names, "losses": losses["loss"]}
    np.savez(out / "pruned_trained.npz", **{f"{optimizer}/{name}": value for optimizer, params in trained.items()
                                            for name, value in params.items()})
    write_gz(out / "pruned.pb", without_callstacks(forward))
    write_gz(out / "pruned_startup.pb", without_callstacks(startup))
    return {"dense": dense, "pruned": trained["momentum"]}


def structured(out: Path, exe, data: dict, dense: dict, meta: dict) -> None:
    """paddle.incubate.asp on CPU in static mode: decorate the optimizer, prune the dense weights 2:4, train."""
    _, main, startup, names = build(classifier(lambda x: nets.dense_layers(x, named=False)),
                                    lambda: asp.decorate(paddle.optimizer.Momentum(0.05, 0.9)))
    paddle_names = dict(zip(("fc1.w", "fc1.b", "fc2.w", "fc2.b"),
                            (param.name for param in main.global_block().all_parameters())))
    pruned = {}

    def prune(scope):
        masks = asp.prune_model(main, n=2, m=4)
        pruned.update({**params_of(scope, main), **{f"{name}.asp_mask": mask for name, mask in masks.items()}})
    initial = {paddle_names[name]: value for name, value in dense.items()}
    losses, scope = train(exe, main, startup, names, data, initial=initial, after_startup=prune)
    np.savez(out / "asp_init.npz", **pruned)
    np.savez(out / "asp_trained.npz", **params_of(scope, main))
    write_gz(out / "asp_train.pb", without_callstacks(main))
    write_gz(out / "asp_startup.pb", without_callstacks(startup))
    meta["asp"] = {**names, "losses": losses["loss"]}


def low_rank(out: Path, exe, data: dict, dense: dict, meta: dict) -> dict:
    initial = nets.factor(dense)
    np.savez(out / "lowrank_init.npz", **initial)
    forward, main, startup, names = build(classifier(nets.low_rank_layers), lambda: paddle.optimizer.Adam(0.01))
    losses, scope = train(exe, main, startup, names, data, initial=initial)
    trained = params_of(scope, main)
    np.savez(out / "lowrank_trained.npz", **trained)
    write_gz(out / "lowrank.pb", without_callstacks(forward))
    meta["lowrank"] = {**names, "losses": losses["loss"]}
    return trained


def export(out: Path, exe, test: np.ndarray, weights: dict, masks: dict, meta: dict) -> None:
    """Each net's logits saved for inference from its trained weights and run by the Predictor on the test images."""
    layers = {"dense": nets.dense_layers, "pruned": lambda x: nets.dense_layers(x, masks),
              "lowrank": nets.low_rank_layers}
    outputs, sizes = {}, {}
    for name, make in layers.items():
        infer, infer_startup = paddle.static.Program(), paddle.static.Program()
        with paddle.static.program_guard(infer, infer_startup):
            image = paddle.static.data("image", [-1, 1, nets.SIDE, nets.SIDE], "float32")
            logits = make(image)
        scope = paddle.static.Scope()
        with paddle.static.scope_guard(scope), tempfile.TemporaryDirectory() as saved:
            exe.run(infer_startup)
            for param, value in weights[name].items():
                scope.var(param).get_tensor().set(value, paddle.CPUPlace())
            paddle.static.save_inference_model(f"{saved}/{name}", [image], [logits], exe, program=infer)
            write_gz(out / f"{name}.pdmodel", Path(f"{saved}/{name}.pdmodel").read_bytes())
            sizes[name] = Path(f"{saved}/{name}.pdiparams").stat().st_size
            predictor = paddle.inference.create_predictor(paddle.inference.Config(f"{saved}/{name}.pdmodel",
                                                                                  f"{saved}/{name}.pdiparams"))
            predictor.get_input_handle("image").copy_from_cpu(test)
            predictor.run()
            (output,) = predictor.get_output_names()
            outputs[name] = predictor.get_output_handle(output).copy_to_cpu()
    np.savez(out / "predictor.npz", image=test, **outputs)
    meta["predictor"] = {"pdiparams_bytes": sizes}


def float64_kl_gradients(meta: dict) -> None:
    """Paddle's float64 gradients (dygraph autograd) of T^2 KL(softmax(t/T) || softmax(s/T)), batchmean, as to the
    student's and the teacher's logits, against central differences: the largest absolute difference of each."""
    paddle.disable_static()
    student0, teacher0 = RNG.standard_normal((4, nets.CLASSES)), RNG.standard_normal((4, nets.CLASSES))

    def kl(student, teacher):
        return TEMPERATURE ** 2 * F.kl_div(F.log_softmax(student / TEMPERATURE, axis=1),
                                           F.softmax(teacher / TEMPERATURE, axis=1), reduction="batchmean")

    student, teacher = (paddle.to_tensor(value, stop_gradient=False) for value in (student0, teacher0))
    grads = paddle.grad(kl(student, teacher), [student, teacher], allow_unused=True)
    errors = {}
    for which, (name, grad) in enumerate(zip(("student", "teacher"), grads)):
        point = [student0, teacher0]
        numeric = np.zeros(point[which].size)
        for i in range(numeric.size):
            step = np.zeros(numeric.size)
            step[i] = 1e-6
            values = [float(kl(*(paddle.to_tensor(p + sign * step.reshape(p.shape) if k == which else p)
                                 for k, p in enumerate(point)))) for sign in (1, -1)]
            numeric[i] = (values[0] - values[1]) / 2e-6
        given = np.zeros(numeric.size) if grad is None else grad.numpy().ravel()
        errors[name] = {"max_abs_error": float(np.abs(given - numeric).max()), "largest": float(np.abs(numeric).max()),
                        "paddle_gave": grad is not None}
    meta["paddle_float64_kl_gradient"] = errors
    paddle.enable_static()


def main(out: Path) -> None:
    paddle_legacy_shim.install()
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    templates = RNG.standard_normal((nets.CLASSES, 1, nets.SIDE, nets.SIDE))
    data, test = images(EXAMPLES, templates), images(8, templates)
    np.savez(out / "data.npz", **data)
    meta = {"alpha": ALPHA, "temperature": TEMPERATURE, "beta": BETA}
    distillation(out, exe, data, meta)
    weights = dense_and_pruned(out, exe, data, meta)
    structured(out, exe, data, weights["dense"], meta)
    weights["lowrank"] = low_rank(out, exe, data, weights["dense"], meta)
    export(out, exe, test["image"], weights, nets.magnitude_masks(weights["dense"], 0.5), meta)
    float64_kl_gradients(meta)
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


if __name__ == "__main__":
    Path(sys.argv[1]).mkdir(parents=True, exist_ok=True)
    main(Path(sys.argv[1]))
