"""The federated-learning and privacy engineer's programs of docs/tools.md's 'A federated-learning and privacy
engineer's week', written with Paddle 3.3.1's layers in legacy static mode (FLAGS_enable_pir_api=0):

- mlp: x [-1, 8] through Linear(8, 16), ReLU, Linear(16, 3); F.cross_entropy against integer labels; SGD(0.1).
- cnn: img [-1, 1, 6, 6] through Conv2D(1, 4, 3), ReLU, MaxPool2D(2), flatten, Linear(16, 3); F.cross_entropy; SGD(0.1).
- fedprox: the mlp's loss plus mu/2 * ||w - w_global||^2 over its four parameters, each w_global a fed input
  (paddle.static.data "global_" + the parameter's name, stop_gradient); SGD(0.1), mu 0.5.

Federated averaging (mlp, cnn, fedprox): ROUNDS rounds; each of 3 clients starts from the global weights, trains
LOCAL steps of BATCH on its own shard (12, 16 and 20 examples), and the server averages the clients' weights weighted
by shard size. Each model's folder: forward.pb (main.clone() before minimize), train.pb, startup.pb, init.npz (the
round-0 global weights), shards.npz (client_K_x / client_K_label ...), and in meta.json each round's clients' losses
and each round's global weights in rounds.npz (round_R/NAME). DP-SGD (dpsgd/): the mlp's per-example gradients of a
batch of 8, each by a run of Paddle's gradients() program on that example alone (per_example.npz, NAME@GRAD of shape
[8, ...]), clipped to norm CLIP over all parameters, summed, Gaussian noise (noise.npz, drawn by numpy, std
SIGMA * CLIP) added, divided by 8 and applied by SGD at 0.1 (dp_step.npz, the weights after).

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week56.py tests/data/paddle/user_week56
"""

import json
from pathlib import Path

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle_programs import legacy_persistables, script_main, without_callstacks, write_gz

FEATURES, HIDDEN, CLASSES, BATCH, LOCAL, ROUNDS, LR, MU = 8, 16, 3, 4, 3, 2, 0.1, 0.5
SHARDS, CLIP, SIGMA, DP_BATCH = (12, 16, 20), 1.0, 0.8, 8
RNG = np.random.default_rng(56)


def mlp_net():
    x = paddle.static.data("x", [-1, FEATURES], "float32")
    label = paddle.static.data("label", [-1, 1], "int64")
    logits = nn.Linear(HIDDEN, CLASSES)(F.relu(nn.Linear(FEATURES, HIDDEN)(x)))
    return F.cross_entropy(logits, label), logits


def cnn_net():
    img = paddle.static.data("img", [-1, 1, 6, 6], "float32")
    label = paddle.static.data("label", [-1, 1], "int64")
    pooled = nn.MaxPool2D(2)(F.relu(nn.Conv2D(1, 4, 3)(img)))
    logits = nn.Linear(16, CLASSES)(paddle.flatten(pooled, 1))
    return F.cross_entropy(logits, label), logits


def fedprox_net():
    loss, logits = mlp_net()
    proximal = []
    for param in paddle.static.default_main_program().all_parameters():
        w_global = paddle.static.data("global_" + param.name, param.shape, "float32")
        proximal.append(paddle.sum(paddle.square(param - w_global)))
    return loss + MU / 2 * paddle.add_n(proximal), logits


MODELS = {"mlp": mlp_net, "cnn": cnn_net, "fedprox": fedprox_net}


def shard(model: str, size: int, client: int) -> dict:
    """A client's examples; each client's labels lean to its own class (non-IID, as federated data is)."""
    shape = (size, 1, 6, 6) if model == "cnn" else (size, FEATURES)
    x = RNG.normal(size=shape).astype(np.float32)
    score = x.reshape(size, -1)[:, :3] + np.eye(CLASSES, dtype=np.float32)[client] * 0.8
    return {"img" if model == "cnn" else "x": x, "label": np.argmax(score, 1).reshape(-1, 1).astype(np.int64)}


def build(model: str):
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 56
    with paddle.static.program_guard(main, startup):
        loss, logits = MODELS[model]()
        forward = main.clone()
        paddle.optimizer.SGD(LR).minimize(loss)
    return main, startup, forward, loss, logits


def federated(out: Path, model: str, exe) -> dict:
    main, startup, forward, loss, logits = build(model)
    folder = out / model
    folder.mkdir(parents=True, exist_ok=True)
    shards = [shard(model, size, k) for k, size in enumerate(SHARDS)]
    scope = paddle.static.Scope()
    params = [p.name for p in main.all_parameters()]
    rounds, losses = {}, []
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        initial = legacy_persistables(forward, scope)
        np.savez(folder / "init.npz", **initial)
        global_weights = {name: initial[name] for name in params}
        for round_ in range(ROUNDS):
            client_weights, round_losses = [], []
            for data in shards:
                for name, value in global_weights.items():
                    scope.var(name).get_tensor().set(value, paddle.CPUPlace())
                feeds_global = {"global_" + n: v for n, v in global_weights.items()} if model == "fedprox" else {}
                steps = []
                for step in range(LOCAL):
                    feed = {k: v[step * BATCH:(step + 1) * BATCH] for k, v in data.items()}
                    steps.append(float(exe.run(main, feed={**feed, **feeds_global}, fetch_list=[loss.name])[0]))
                round_losses.append(steps)
                client_weights.append({n: np.array(scope.var(n).get_tensor()) for n in params})
            total = sum(SHARDS)
            global_weights = {n: sum(w[n] * size for w, size in zip(client_weights, SHARDS)) / total for n in params}
            rounds.update({f"round_{round_}/{n}": v for n, v in global_weights.items()})
            losses.append(round_losses)
        for name, value in global_weights.items():
            scope.var(name).get_tensor().set(value, paddle.CPUPlace())
        every = {k: np.concatenate([d[k] for d in shards]) for k in shards[0]}
        (final_logits,) = exe.run(forward, feed={**every, **({"global_" + n: v for n, v in global_weights.items()}
                                                            if model == "fedprox" else {})},
                                  fetch_list=[logits.name])
    np.savez(folder / "rounds.npz", **rounds)
    np.savez(folder / "outputs.npz", logits=final_logits)
    np.savez(folder / "shards.npz", **{f"client_{k}/{name}": v for k, d in enumerate(shards) for name, v in d.items()})
    for program_name, program in [("forward", forward), ("train", main), ("startup", startup)]:
        write_gz(folder / f"{program_name}.pb", without_callstacks(program))
    return {"loss": loss.name, "logits": logits.name, "params": params, "losses": losses}


def dpsgd(out: Path, exe) -> dict:
    """Per-example gradients of the mlp at its initial weights, one example a run, and one DP-SGD step of them."""
    folder = out / "dpsgd"
    folder.mkdir(parents=True, exist_ok=True)
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 56
    with paddle.static.program_guard(main, startup):
        loss, _ = mlp_net()
        forward = main.clone()
        params = main.all_parameters()
        grads = paddle.static.gradients(loss, params)
    data = shard("mlp", DP_BATCH, 0)
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        initial = legacy_persistables(forward, scope)
        per_example = [exe.run(main, feed={k: v[i:i + 1] for k, v in data.items()}, fetch_list=grads)
                       for i in range(DP_BATCH)]
        (batch_loss,) = exe.run(main, feed=data, fetch_list=[loss.name])
    stacked = {p.name + "@GRAD": np.stack([g[j] for g in per_example]) for j, p in enumerate(params)}
    norms = np.sqrt(sum(np.sum(np.square(g.reshape(DP_BATCH, -1)), 1) for g in stacked.values()))
    scale = np.minimum(1.0, CLIP / norms)
    noise = {p.name: (RNG.normal(size=p.shape) * SIGMA * CLIP).astype(np.float32) for p in params}
    stepped = {p.name: initial[p.name] - LR * (np.tensordot(scale, stacked[p.name + "@GRAD"], 1) + noise[p.name])
               / DP_BATCH for p in params}
    np.savez(folder / "init.npz", **initial)
    np.savez(folder / "data.npz", **data)
    np.savez(folder / "per_example.npz", **stacked)
    np.savez(folder / "noise.npz", **noise)
    np.savez(folder / "dp_step.npz", **stepped)
    write_gz(folder / "forward.pb", without_callstacks(forward))
    return {"loss": loss.name, "batch_loss": float(batch_loss), "norms": norms.tolist(),
            "params": [p.name for p in params]}


def main(out: Path) -> None:
    import paddle_legacy_shim
    paddle_legacy_shim.install()
    paddle.enable_static()
    out.mkdir(parents=True, exist_ok=True)
    exe = paddle.static.Executor(paddle.CPUPlace())
    meta = {name: federated(out, name, exe) for name in MODELS}
    meta["dpsgd"] = dpsgd(out, exe)
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


if __name__ == "__main__":
    script_main(main, lambda out: None)
