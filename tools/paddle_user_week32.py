"""The self-supervised-learning researcher's programs of docs/tools.md's 'A self-supervised-learning researcher's
week', written with Paddle 3.3.1's layers in legacy static mode (FLAGS_enable_pir_api=0), on vectors of 8 features
(3 classes of noisy prototypes; the two views of each example are host-side augmentations: noise and a random scale):

- simclr: an encoder (Linear 8 -> 16, relu, Linear 16 -> 8) and a projector (Linear 8 -> 8, relu, Linear 8 -> 4) over
  both views concatenated, F.normalize's ops, the NT-Xent loss over 2B x 2B similarities / 0.5 with the diagonal
  masked by -1e9 * eye(2B) (2B read from the batch: paddle.shape) and labels (arange(2B) + B) % 2B, cross_entropy.
  LarsMomentumOptimizer(0.1, 0.9, lars_weight_decay 5e-4, biases excluded), 3 steps of 4 pairs.
- moco: MoCo v2's query encoder (the same layers) and a key encoder (ParamAttr(trainable=False), its weights the
  query's at the start), the key's output detached; logits [q.k, q.queue^T] / 0.2 against label 0; Momentum(0.05,
  0.9). After minimize, in the program: each key weight assign(m * k + (1 - m) * q) with m = 0.9, and the queue of 8
  negatives (a persistable global var) assign(concat([k, queue])[:8]). 3 steps.
- moco_ring: MoCo with the queue a ring buffer: the keys written at a persistable pointer by paddle.static.setitem
  (set_value with tensor starts), the pointer moved by 4 modulo 8 (its steps: the keys, queue and pointer alone).
- simsiam: an encoder with BatchNorm1D, a predictor MLP, stop-gradient on the target branch (z.detach()), the negative
  cosine similarity (F.cosine_similarity) symmetrised; SGD with CosineAnnealingDecay(0.05, T_max=3) and weight decay.
- probe: a linear probe on the trained SimCLR encoder, its weights ParamAttr(trainable=False); Momentum(0.1), 3 steps.

Each: NAME.pb (the forward, cloned before minimize), NAME_train.pb (Paddle's minimize), NAME_startup.pb;
NAME_init.npz (the persistables before the first step), NAME_steps.npz (Paddle's persistables after each step,
keyed "STEP:NAME"), NAME_grads.npz (the first step's parameter gradients); data.npz (each step's views and labels);
meta.json (losses per step, learning rates, vars' names).

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week32.py tests/data/paddle/user_week32
"""

import functools
import gzip
import json
import sys
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
import paddle_legacy_shim
from paddle_user_week22 import normalize

DIM, HIDDEN, FEATURE, PROJ, CLASSES, BATCH, STEPS = 8, 16, 8, 4, 3, 4, 3
SIMCLR_TEMP, MOCO_TEMP, QUEUE, KEY_MOMENTUM = 0.5, 0.2, 8, 0.9
RNG = np.random.default_rng(32)
PROTOTYPES = RNG.standard_normal((CLASSES, DIM))


def write_gz(path: Path, program) -> None:
    """The program gzipped without its ops' call stacks, from a clone's desc: paddle_programs.without_callstacks
    parses the bytes back into a Program, which drops trainable=False (stop_gradient) from the frozen parameters."""
    copy = program.clone()
    for block in copy.blocks:
        for op in block.ops:
            op.desc.remove_attr("op_callstack")
    path.with_name(path.name + ".gz").write_bytes(gzip.compress(copy.desc.serialize_to_string(), mtime=0))


def views(count: int) -> dict:
    """Two augmented views of `count` noisy prototypes (noise 0.3, then a scale in [0.8, 1.2] per view)."""
    labels = RNG.integers(0, CLASSES, count)
    base = PROTOTYPES[labels] + 0.3 * RNG.standard_normal((count, DIM))

    def augment():
        return (base * RNG.uniform(0.8, 1.2, (count, 1)) + 0.1 * RNG.standard_normal((count, DIM))).astype(np.float32)
    return {"x1": augment(), "x2": augment(), "label": labels.reshape(-1, 1).astype(np.int64)}


def linear(fan_in, fan_out, name, trainable=True):
    return paddle.nn.Linear(fan_in, fan_out, weight_attr=paddle.ParamAttr(name=f"{name}.w", trainable=trainable),
                            bias_attr=paddle.ParamAttr(name=f"{name}.b", trainable=trainable))


def encoder(prefix, trainable=True):
    return paddle.nn.Sequential(linear(DIM, HIDDEN, f"{prefix}1", trainable), paddle.nn.ReLU(),
                                linear(HIDDEN, FEATURE, f"{prefix}2", trainable))


def projector(prefix, trainable=True):
    return paddle.nn.Sequential(linear(FEATURE, FEATURE, f"{prefix}1", trainable), paddle.nn.ReLU(),
                                linear(FEATURE, PROJ, f"{prefix}2", trainable))


def nt_xent(z):
    """NT-Xent over the 2B unit vectors z: similarities / T, the diagonal masked, each view's positive the other;
    the loss and the mask (1e9 * eye, computed from constants alone)."""
    n = paddle.shape(z)[0]
    mask = 1e9 * paddle.eye(n)
    sim = paddle.matmul(z, z, transpose_y=True) / SIMCLR_TEMP - mask
    labels = paddle.unsqueeze((paddle.arange(n) + n // 2) % n, 1)
    return F.cross_entropy(sim, labels), mask


def simclr():
    x1, x2 = paddle.static.data("x1", [-1, DIM], "float32"), paddle.static.data("x2", [-1, DIM], "float32")
    z = normalize(projector("proj")(encoder("enc")(paddle.concat([x1, x2], 0))), axis=1)
    loss, mask = nt_xent(z)
    return loss, paddle.incubate.optimizer.LarsMomentumOptimizer(
        0.1, 0.9, lars_weight_decay=5e-4, exclude_from_weight_decay=[".b"]), {"mask": mask.name}


def moco(ring: bool = False):
    """ring: the queue a ring buffer, as MoCo's own code keeps it: the batch's keys written at a pointer (a persistable
    int64) by paddle.static.setitem, the pointer moved by B modulo the queue's length (the batch size then fixed)."""
    batch = BATCH if ring else -1
    x1, x2 = paddle.static.data("x1", [batch, DIM], "float32"), paddle.static.data("x2", [batch, DIM], "float32")
    query = paddle.nn.Sequential(encoder("q_enc"), projector("q_proj"))
    key = paddle.nn.Sequential(encoder("k_enc", False), projector("k_proj", False))
    queue = paddle.static.create_global_var([QUEUE, PROJ], 0.0, "float32", persistable=True, name="moco_queue")
    q = normalize(query(x1), axis=1)
    k = normalize(key(x2), axis=1).detach()
    positive = paddle.sum(q * k, axis=1, keepdim=True)
    logits = paddle.concat([positive, paddle.matmul(q, queue, transpose_y=True)], 1) / MOCO_TEMP
    loss = F.cross_entropy(logits, paddle.zeros_like(positive, dtype="int64"))

    def after_minimize():
        """MoCo's key update and queue, in the program after the optimizer's ops."""
        for q_param, k_param in zip(query.parameters(), key.parameters()):
            paddle.assign(k_param * KEY_MOMENTUM + q_param * (1 - KEY_MOMENTUM), k_param)
        if not ring:
            paddle.assign(paddle.concat([k, queue], 0)[:QUEUE], queue)
            return
        pointer = paddle.static.create_global_var([1], 0, "int64", persistable=True, name="queue_ptr")
        paddle.assign(paddle.static.setitem(queue, slice(pointer, pointer + BATCH), k), queue)
        paddle.assign((pointer + BATCH) % QUEUE, pointer)
    return loss, paddle.optimizer.Momentum(0.05, 0.9), {"after_minimize": after_minimize, "key": k.name}


def simsiam():
    x1, x2 = paddle.static.data("x1", [-1, DIM], "float32"), paddle.static.data("x2", [-1, DIM], "float32")
    backbone = paddle.nn.Sequential(linear(DIM, HIDDEN, "ss_enc1"), paddle.nn.BatchNorm1D(HIDDEN), paddle.nn.ReLU(),
                                    linear(HIDDEN, FEATURE, "ss_enc2"))
    predictor = paddle.nn.Sequential(linear(FEATURE, HIDDEN, "ss_pred1"), paddle.nn.ReLU(),
                                     linear(HIDDEN, FEATURE, "ss_pred2"))
    z1, z2 = backbone(x1), backbone(x2)
    p1, p2 = predictor(z1), predictor(z2)
    loss = -(F.cosine_similarity(p1, z2.detach()).mean() + F.cosine_similarity(p2, z1.detach()).mean()) / 2
    schedule = paddle.optimizer.lr.CosineAnnealingDecay(0.05, T_max=STEPS)
    return loss, paddle.optimizer.SGD(schedule, weight_decay=1e-4), {"schedule": schedule}


def probe():
    x = paddle.static.data("x1", [-1, DIM], "float32")
    label = paddle.static.data("label", [-1, 1], "int64")
    logits = linear(FEATURE, CLASSES, "probe")(encoder("enc", trainable=False)(x))
    return F.cross_entropy(logits, label), paddle.optimizer.Momentum(0.1, 0.9), {"logits": logits.name}


def persistables(program, scope) -> dict:
    names = [var.name for var in program.list_vars() if var.persistable and var.name not in ("feed", "fetch")]
    return {name: np.array(scope.var(name).get_tensor()) for name in names
            if scope.find_var(name) is not None and scope.find_var(name).get_tensor()._is_initialized()}


def run_model(out: Path, name: str, build, batches: list, init=None, recorded=None) -> dict:
    """Build, write and train one model with Paddle, init(startup's values) overriding some of them; its meta.
    ``recorded``: the persistables kept after each step (default: all but the learning rate and velocities)."""
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 32
    with paddle.static.program_guard(main, startup):
        loss, optimizer, extra = build()
        forward = main.clone()
        optimizer.minimize(loss)
        if "after_minimize" in extra:
            extra["after_minimize"]()
    scope, exe = paddle.static.Scope(), paddle.static.Executor(paddle.CPUPlace())
    kept = recorded or (lambda key: "learning_rate" not in key and "velocity" not in key)
    params = [param.name for param in main.all_parameters() if param.trainable]
    meta = {"loss": loss.name, "params": params, "losses": [], "lr": []}
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        for key, value in (init(persistables(main, scope)) if init else {}).items():
            scope.var(key).get_tensor().set(value, paddle.CPUPlace())
        np.savez_compressed(out / f"{name}_init.npz", **persistables(main, scope))
        steps, extra_grads = {}, {}
        if "mask" in extra:   # paddle.static.gradients of the loss with respect to the mask, its flag cleared
            masked = forward.clone()
            with paddle.static.program_guard(masked, paddle.static.Program()):
                masked.global_block().var(extra["mask"]).stop_gradient = False
                (mask_grad,) = paddle.static.gradients(masked.global_block().var(loss.name),
                                                       masked.global_block().var(extra["mask"]))
            feed = {key: value for key, value in batches[0].items() if key != "label"}
            extra_grads["mask"] = exe.run(masked, feed=feed, fetch_list=[mask_grad])[0]
        for step, feed in enumerate(batches):
            wanted = {key: value for key, value in feed.items() if main.global_block().has_var(key)}
            fetched = exe.run(main, feed=wanted, fetch_list=[loss.name] + [p + "@GRAD" for p in params])
            meta["losses"].append(float(fetched[0]))
            if step == 0 and recorded is None:
                np.savez_compressed(out / f"{name}_grads.npz", **dict(zip(params, fetched[1:])), **extra_grads)
            if "schedule" in extra:
                meta["lr"].append(extra["schedule"]())
                extra["schedule"].step()
            steps.update({f"{step}:{key}": value for key, value in persistables(main, scope).items()
                          if kept(key)})
        np.savez_compressed(out / f"{name}_steps.npz", **steps)
    for suffix, program in [("", forward), ("_train", main), ("_startup", startup)]:
        write_gz(out / f"{name}{suffix}.pb", program)
    meta.update({key: value for key, value in extra.items() if isinstance(value, str)})
    return meta


def main(out: Path) -> None:
    paddle_legacy_shim.install()
    paddle.enable_static()
    batches = [views(BATCH) for _ in range(STEPS)]
    np.savez_compressed(out / "data.npz", **{f"{step}:{key}": value for step, batch in enumerate(batches)
                                  for key, value in batch.items()})
    meta = {"simclr": run_model(out, "simclr", simclr, batches)}
    queue = RNG.standard_normal((QUEUE, PROJ))
    queue = (queue / np.linalg.norm(queue, axis=1, keepdims=True)).astype(np.float32)

    def moco_init(values):
        """MoCo's key encoder starts as its query encoder; its queue holds unit random vectors."""
        return {"moco_queue": queue, **{key.replace("q_", "k_", 1): value for key, value in values.items()
                                        if key.startswith("q_")}}
    meta["moco"] = run_model(out, "moco", moco, batches, init=moco_init)
    meta["moco_ring"] = run_model(out, "moco_ring", functools.partial(moco, ring=True), batches, init=moco_init,
                                  recorded=lambda key: key.startswith(("k_", "moco_queue", "queue_ptr")))
    meta["simsiam"] = run_model(out, "simsiam", simsiam, batches)
    trained = np.load(out / "simclr_steps.npz")
    encoder_weights = {key.split(":", 1)[1]: trained[key] for key in trained.files
                       if key.startswith(f"{STEPS - 1}:enc")}
    meta["probe"] = run_model(out, "probe", probe, batches, init=lambda _: encoder_weights)
    meta.update({"steps": STEPS, "key_momentum": KEY_MOMENTUM, "queue": QUEUE})
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


if __name__ == "__main__":
    Path(sys.argv[1]).mkdir(parents=True, exist_ok=True)
    main(Path(sys.argv[1]))
