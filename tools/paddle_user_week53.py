"""The neural-architecture-search researcher's programs of docs/tools.md's 'A neural-architecture-search researcher's
week', written with Paddle 3.3.1's layers in legacy static mode (FLAGS_enable_pir_api=0): a DARTS search cell on
8x8 images of 3 channels, 3 classes.

The network: a stem conv (nn.Conv2D 3 -> 4, relu), then a cell of two nodes over three edges (stem -> n1, stem -> n2,
n1 -> n2), each edge a mixed operation: zero (x * 0), identity, nn.AvgPool2D(3, 1, 1), nn.MaxPool2D(3, 1, 1), relu +
3x3 conv, relu + 3x3 conv of dilation 2, summed with the weights softmax(alpha[edge]) of the architecture parameters
alpha [3, 6] (paddle.static.create_parameter 'arch_alpha', a separate parameter set); n1 + n2 averaged over the image,
nn.Linear to 3 classes, F.cross_entropy. The convs are the layers' weights read by F.conv2d / F.linear so that the
same net runs on other weights (the virtual step of the second-order approximation).

- search: train_loss on a train batch (x, y), val_loss on a validation batch (xv, yv) in one program; Adam(0.01,
  parameters=[alpha]).minimize(val_loss), then Momentum(0.05, 0.9, parameters=the weights).minimize(train_loss): the
  first-order approximation, each optimizer updating only its own set. forward.pb (before minimize), train.pb,
  startup.pb, init.npz, trained.npz; losses (both, each step) in meta.json.
- unrolled: the second-order approximation's loss: g = paddle.static.gradients(train_loss, weights), w' = w - xi * g
  (xi 0.05, the weights' rate), val_loss of the net on w' (unrolled.pb, the virtual step's backward inside it); with
  init.npz and the first batch, Paddle's gradient of it by arch_alpha (paddle.static.gradients again) in
  unrolled_grads.npz, if Paddle can compute it (meta.json says).
- discrete: the net with each edge's argmax op of the trained alpha only (discrete.pb, forward), its logits on the
  validation batches of the trained weights in outputs.npz.
- gumbel: the search net's weights drawn by F.gumbel_softmax(alpha, temperature 1) per edge (gumbel.pb, forward).
PIR half: the search program built and minimized in PIR static mode, search_pir_train.json / search_pir_startup.json,
search_pir_init.npz, its train losses on the same batches in pir_losses.json.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week53.py tests/data/paddle/user_week53
"""

import json
from pathlib import Path

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle_programs import legacy_persistables, pir_half, script_main, without_callstacks, write_gz, write_pir_gz

BATCH, STEPS, CHANNELS, SIDE, CLASSES, XI = 8, 4, 4, 8, 3, 0.05
OPS = ("zero", "skip", "avg_pool", "max_pool", "conv_3x3", "dil_conv_3x3")
EDGES = ((0, 1), (0, 2), (1, 2))   # (from node, to node); node 0 is the stem
RNG = np.random.default_rng(53)


def layers() -> dict:
    """The search net's weight layers, created in one order so every program names them alike."""
    made = {"stem": nn.Conv2D(3, CHANNELS, 3, padding=1)}
    for edge in range(len(EDGES)):
        made[f"conv{edge}"] = nn.Conv2D(CHANNELS, CHANNELS, 3, padding=1)
        made[f"dil{edge}"] = nn.Conv2D(CHANNELS, CHANNELS, 3, padding=2, dilation=2)
    made["head"] = nn.Linear(CHANNELS, CLASSES)
    return made


def weights_of(made: dict) -> dict:
    return {f"{name}.{part}": getattr(layer, part) for name, layer in made.items() for part in ("weight", "bias")}


def candidate(h, op: str, edge: int, w: dict):
    if op == "zero":
        return h * 0.0
    if op == "skip":
        return h
    if op == "avg_pool":
        return nn.AvgPool2D(3, 1, 1)(h)
    if op == "max_pool":
        return nn.MaxPool2D(3, 1, 1)(h)
    dilation = 2 if op == "dil_conv_3x3" else 1
    prefix = "dil" if dilation == 2 else "conv"
    return F.conv2d(F.relu(h), w[f"{prefix}{edge}.weight"], w[f"{prefix}{edge}.bias"], padding=dilation,
                    dilation=dilation)


def net(x, w: dict, edge_weights):
    """Logits of the cell; ``edge_weights(edge)`` gives one edge's 6 op weights, or None with a chosen op per edge."""
    nodes = [F.relu(F.conv2d(x, w["stem.weight"], w["stem.bias"], padding=1))]
    for target in (1, 2):
        total = None
        for edge, (source, to) in enumerate(EDGES):
            if to != target:
                continue
            mixing = edge_weights(edge)
            if isinstance(mixing, str):
                out = candidate(nodes[source], mixing, edge, w)
            else:
                out = sum(mixing[i] * candidate(nodes[source], op, edge, w) for i, op in enumerate(OPS))
            total = out if total is None else total + out
        nodes.append(total)
    pooled = paddle.mean(nodes[1] + nodes[2], axis=[2, 3])
    return F.linear(pooled, w["head.weight"], w["head.bias"])


def inputs():
    return [paddle.static.data(name, [-1, 3, SIDE, SIDE], "float32") if name.startswith("x") else
            paddle.static.data(name, [-1, 1], "int64") for name in ("x", "y", "xv", "yv")]


def alpha_parameter():
    return paddle.static.create_parameter([len(EDGES), len(OPS)], "float32", name="arch_alpha",
                                          default_initializer=nn.initializer.Normal(0.0, 1e-3))


def softmax_mixing(alpha):
    weights = F.softmax(alpha, axis=-1)
    return lambda edge: [weights[edge, i] for i in range(len(OPS))]


def search_losses():
    x, y, xv, yv = inputs()
    alpha, w = alpha_parameter(), weights_of(layers())
    mixing = softmax_mixing(alpha)
    train_loss = F.cross_entropy(net(x, w, mixing), y)
    val_logits = net(xv, w, mixing)
    return train_loss, F.cross_entropy(val_logits, yv), val_logits, alpha, w


def optimizers(alpha, w):
    return (paddle.optimizer.Adam(0.01, parameters=[alpha]),
            paddle.optimizer.Momentum(0.05, 0.9, parameters=list(w.values())))


def data() -> dict:
    """Train and validation batches: the class is the quadrant of the brightest blob (3 of 4 quadrants)."""
    def batch(count):
        images = RNG.normal(0, 0.5, size=(count, 3, SIDE, SIDE)).astype(np.float32)
        labels = RNG.integers(0, CLASSES, size=count)
        for row, label in enumerate(labels):
            top, left = divmod(int(label), 2)
            images[row, :, top * 4:top * 4 + 4, left * 4:left * 4 + 4] += 1.0
        return images, labels.reshape(-1, 1).astype(np.int64)
    x, y = batch(BATCH * STEPS)
    xv, yv = batch(BATCH * STEPS)
    return {"x": x, "y": y, "xv": xv, "yv": yv}


def fresh():
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 53
    return main, startup


def search(out: Path, exe, arrays: dict) -> dict:
    main, startup = fresh()
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        train_loss, val_loss, val_logits, alpha, w = search_losses()
        forward = main.clone()
        arch, weights = optimizers(alpha, w)
        arch.minimize(val_loss)
        weights.minimize(train_loss)
    scope, train_losses, val_losses = paddle.static.Scope(), [], []
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        np.savez(out / "init.npz", **legacy_persistables(forward, scope))
        for step in range(STEPS):
            feed = {k: v[step * BATCH:(step + 1) * BATCH] for k, v in arrays.items()}
            t, v = exe.run(main, feed=feed, fetch_list=[train_loss.name, val_loss.name])
            train_losses.append(float(t))
            val_losses.append(float(v))
        trained = legacy_persistables(forward, scope)
        np.savez(out / "trained.npz", **trained)
    for name, program in (("forward", forward), ("train", main), ("startup", startup)):
        write_gz(out / f"{name}.pb", without_callstacks(program))
    return {"train_loss": train_loss.name, "val_loss": val_loss.name, "val_logits": val_logits.name,
            "weights": sorted(p.name for p in w.values()), "train_losses": train_losses, "val_losses": val_losses,
            "alpha_trained": trained["arch_alpha"].tolist()}


def unrolled(out: Path, exe, arrays: dict) -> dict:
    """The second-order loss: val_loss at w' = w - xi * dL_train/dw; Paddle's d/dalpha of it if it has one."""
    main, startup = fresh()
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        x, y, xv, yv = inputs()
        alpha, w = alpha_parameter(), weights_of(layers())
        mixing = softmax_mixing(alpha)
        train_loss = F.cross_entropy(net(x, w, mixing), y)
        grads = paddle.static.gradients(train_loss, list(w.values()))
        virtual = {key: value - XI * grad for (key, value), grad in zip(w.items(), grads)}
        val_loss = F.cross_entropy(net(xv, virtual, mixing), yv)
        forward = main.clone()
        result = {"val_loss": val_loss.name, "train_loss": train_loss.name}
        try:
            (alpha_grad,) = paddle.static.gradients(val_loss, [alpha])
        except Exception as error:  # noqa: BLE001 - recorded for the doc: Paddle's own second-order limits
            alpha_grad, result["paddle_error"] = None, f"{type(error).__name__}: {str(error)[:300]}"
    write_gz(out / "unrolled.pb", without_callstacks(forward))
    feed = {k: v[:BATCH] for k, v in arrays.items()}
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        for name, value in np.load(out / "init.npz").items():
            scope.var(name).get_tensor().set(value, paddle.CPUPlace())
        fetch = [val_loss.name] + ([alpha_grad.name] if alpha_grad is not None else [])
        try:
            values = exe.run(main, feed=feed, fetch_list=fetch)
        except Exception as error:  # noqa: BLE001
            result["paddle_error"] = f"{type(error).__name__}: {str(error)[:300]}"
            values = exe.run(forward, feed=feed, fetch_list=fetch[:1])
    result["unrolled_val_loss"] = float(values[0])
    if len(values) > 1:
        np.savez(out / "unrolled_grads.npz", arch_alpha=values[1])
    return result


def discrete(out: Path, exe, arrays: dict, alpha: np.ndarray) -> dict:
    """The architecture of the argmax op per edge (zero left out), run on the validation batches, trained weights."""
    chosen = [OPS[1 + int(i)] for i in np.argmax(alpha[:, 1:], axis=1)]   # DARTS's genotype never picks zero
    main, startup = fresh()
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [-1, 3, SIDE, SIDE], "float32")
        logits = net(x, weights_of(layers()), lambda edge: chosen[edge])
    write_gz(out / "discrete.pb", without_callstacks(main))
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        for name, value in np.load(out / "trained.npz").items():
            if scope.find_var(name) is not None:
                scope.var(name).get_tensor().set(value, paddle.CPUPlace())
        (values,) = exe.run(main, feed={"x": arrays["xv"]}, fetch_list=[logits.name])
    np.savez(out / "outputs.npz", discrete_logits=values)
    return {"chosen": chosen, "discrete_logits": logits.name}


def gumbel(out: Path) -> dict:
    main, startup = fresh()
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        x, y, _, _ = inputs()
        alpha, w = alpha_parameter(), weights_of(layers())
        drawn = [F.gumbel_softmax(alpha[edge], temperature=1.0) for edge in range(len(EDGES))]
        loss = F.cross_entropy(net(x, w, lambda edge: [drawn[edge][i] for i in range(len(OPS))]), y)
    write_gz(out / "gumbel.pb", without_callstacks(main))
    return {"loss": loss.name}


def main(out: Path) -> None:
    import paddle_legacy_shim
    paddle_legacy_shim.install()
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    arrays = data()
    np.savez_compressed(out / "data.npz", **arrays)
    meta = {"search": search(out, exe, arrays)}
    meta["unrolled"] = unrolled(out, exe, arrays)
    meta["discrete"] = discrete(out, exe, arrays, np.array(meta["search"]["alpha_trained"]))
    meta["gumbel"] = gumbel(out)
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    pir_half(__file__, out)


def main_pir(out: Path) -> None:
    """The search program minimized in PIR static mode (both optimizers), trained on the legacy run's batches."""
    paddle.enable_static()
    main, startup = fresh()
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        train_loss, val_loss, _, alpha, w = search_losses()
        arch, weights = optimizers(alpha, w)
        arch.minimize(val_loss)
        weights.minimize(train_loss)
        paddle._pir_ops.fetch(train_loss, "train_loss", 0).persistable = True
    for program, stem in ((main, "search_pir_train"), (startup, "search_pir_startup")):
        write_pir_gz(program, out / f"{stem}.json")
    exe, scope = paddle.static.Executor(paddle.CPUPlace()), paddle.static.Scope()
    arrays, losses = dict(np.load(out / "data.npz")), []
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        names = [op.attrs()["parameter_name"] for op in main.global_block().ops if op.name() == "builtin.parameter"]
        np.savez(out / "search_pir_init.npz", **{key: np.array(scope.var(key).get_tensor()) for key in names})
        for step in range(STEPS):
            feed = {k: v[step * BATCH:(step + 1) * BATCH] for k, v in arrays.items()}
            losses.append(float(exe.run(main, feed=feed, fetch_list=[train_loss])[0]))
    (out / "pir_losses.json").write_text(json.dumps({"search": losses}, indent=1) + "\n")


if __name__ == "__main__":
    script_main(main, main_pir)
