"""The vision-transformer fine-tuner's programs of docs/tools.md's 'A vision-transformer fine-tuner's week', built by
Paddle 3.3.1's layers and trained by Paddle's executor (legacy static mode):

- vit: a tiny ViT classifier (16x16x3 images, patch 4 by a stride-4 Conv2D + flatten + transpose, a class token and a
  position embedding (concat, add), 2 pre-norm blocks of LayerNorm, nn.MultiHeadAttention (2 heads) and a GELU MLP,
  width 32, 10 classes); drop path with fed per-sample Bernoulli masks scaled by 1/keep; mixup by a fed lambda and
  permutation (gather, weighted sum of images and one-hot labels); F.label_smooth(0.1) and the soft-label
  cross-entropy. AdamW(weight_decay 0.05) whose apply_decay_param_fun excludes LayerNorm, bias, class token and
  position embedding; layer-wise learning-rate decay 0.5 per block by ParamAttr(learning_rate=...); LinearWarmup(2
  steps) into CosineAnnealingDecay(T_max 6); ClipGradByGlobalNorm(1.0); STEPS batches of BATCH.
- merge: the same model and optimizer under GradientMergeOptimizer(k_steps=2, avg=True), stepped over 2 micro-batches
  of 4 for each of the vit case's first 2 batches (the same lambda, each micro-batch permuted within itself).
- the eval model (no drop path, no mixup) saved by save_inference_model from Paddle's trained scope, run by Paddle's
  Predictor on held-out images; and, in PIR mode (Paddle 3's default), the same eval model in dygraph with the trained
  weights, saved by paddle.jit.save and run by the Predictor.

Writes vit.pb.gz / vit_forward.pb.gz / vit_startup.pb.gz and merge.pb.gz / merge_startup.pb.gz (the programs,
gzipped), vit_trained.npz (every parameter after Paddle's 6 steps), batches.npz (the examples, their drop-path masks,
mixup permutations and, per step, lambda; in Paddle's order), test.npz (held-out images and labels),
vit_infer.pdmodel.gz (the saved eval model), predictor.npz (the Predictor's logits), vit_pir.json.gz and
predictor_pir.npz (the jit.save'd model, its weights being vit_trained.npz, and its Predictor's logits) and
meta.json (Paddle's losses per step, its learning rates, the vars' names). The merge case feeds the first 2 batches
of batches.npz as micro-batches of 4, each permutation taken modulo 4.

    FLAGS_enable_pir_api=0 /path/to/paddle/python tools/paddle_user_week20.py tests/data/paddle/user_week20
"""

import gzip
import json
import tempfile
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
import paddle_legacy_shim
from paddle import nn
from paddle_programs import pir_half, predict, script_main, without_callstacks


def write_program(path: Path, program) -> None:
    """Gzipped: Paddle's attributes repeat, 166 KB of ViT training program are 13 KB."""
    path.with_name(path.name + ".gz").write_bytes(gzip.compress(without_callstacks(program), mtime=0))

RNG = np.random.default_rng(20)
IMAGE, PATCH, WIDTH, HEADS, DEPTH, CLASSES = 16, 4, 32, 2, 2, 10
TOKENS = (IMAGE // PATCH) ** 2 + 1
BATCH, STEPS, KEEP, SMOOTH, TESTS = 8, 6, 0.8, 0.1, 8
LR, WARMUP, T_MAX, DECAY, LAYER_DECAY, CLIP = 1e-3, 2, 6, 0.05, 0.5, 1.0
NO_DECAY = ("layer_norm", ".b_", "cls_token", "pos_embed")


def scaled(rate: float) -> paddle.ParamAttr:
    return paddle.ParamAttr(learning_rate=rate)


class Block(nn.Layer):
    """x + drop_path(attn(ln(x))), then x + drop_path(mlp(ln(x))); every parameter's learning rate scaled by rate."""

    def __init__(self, rate: float):
        super().__init__()
        self.norm1 = nn.LayerNorm(WIDTH, weight_attr=scaled(rate), bias_attr=scaled(rate))
        self.attn = nn.MultiHeadAttention(WIDTH, HEADS, weight_attr=scaled(rate), bias_attr=scaled(rate))
        self.norm2 = nn.LayerNorm(WIDTH, weight_attr=scaled(rate), bias_attr=scaled(rate))
        self.fc1 = nn.Linear(WIDTH, 2 * WIDTH, weight_attr=scaled(rate), bias_attr=scaled(rate))
        self.fc2 = nn.Linear(2 * WIDTH, WIDTH, weight_attr=scaled(rate), bias_attr=scaled(rate))

    def forward(self, x, masks):
        attn_mask, mlp_mask = masks if masks else (None, None)
        y = self.norm1(x)
        x = x + drop_path(self.attn(y, y, y), attn_mask)
        return x + drop_path(self.fc2(F.gelu(self.fc1(self.norm2(x)))), mlp_mask)


def drop_path(branch, mask):
    """Stochastic depth: a per-sample keep mask [B, 1, 1] (fed), the kept samples scaled by 1/KEEP."""
    return branch if mask is None else branch * mask / KEEP


class ViT(nn.Layer):
    def __init__(self):
        super().__init__()
        rates = [LAYER_DECAY ** (DEPTH - i) for i in range(DEPTH + 1)]   # embedding, block 0, block 1 (1.0: head)
        self.patch = nn.Conv2D(3, WIDTH, PATCH, stride=PATCH, weight_attr=scaled(rates[0]), bias_attr=scaled(rates[0]))
        self.cls_token = self.create_parameter([1, 1, WIDTH], attr=paddle.ParamAttr(
            name="cls_token", learning_rate=rates[0], initializer=nn.initializer.TruncatedNormal(std=0.02)))
        self.pos_embed = self.create_parameter([1, TOKENS, WIDTH], attr=paddle.ParamAttr(
            name="pos_embed", learning_rate=rates[0], initializer=nn.initializer.TruncatedNormal(std=0.02)))
        self.blocks = nn.LayerList([Block(rates[i + 1]) for i in range(DEPTH)])
        self.norm = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, CLASSES)

    def forward(self, images, masks=None):
        x = paddle.transpose(paddle.flatten(self.patch(images), 2), [0, 2, 1])
        cls = paddle.expand(self.cls_token, [paddle.shape(x)[0], 1, WIDTH])
        x = paddle.concat([cls, x], axis=1) + self.pos_embed
        for i, block in enumerate(self.blocks):
            x = block(x, masks[2 * i:2 * i + 2] if masks else None)
        return self.head(self.norm(x)[:, 0])


def inputs():
    image = paddle.static.data("image", [-1, 3, IMAGE, IMAGE], "float32")
    label = paddle.static.data("label", [-1], "int64")
    lam = paddle.static.data("lam", [1], "float32")
    perm = paddle.static.data("perm", [-1], "int64")
    masks = [paddle.static.data(f"keep{i}", [-1, 1, 1], "float32") for i in range(2 * DEPTH)]
    return image, label, lam, perm, masks


def vit_loss(model):
    """Mixup of the images and one-hot labels by lam and perm, label smoothing, the soft-label cross-entropy."""
    image, label, lam, perm, masks = inputs()
    mixed = lam * image + (1 - lam) * paddle.gather(image, perm)
    one_hot = F.one_hot(label, CLASSES)
    target = F.label_smooth(lam * one_hot + (1 - lam) * paddle.gather(one_hot, perm), epsilon=SMOOTH)
    logits = model(mixed, masks)
    return logits, paddle.mean(F.cross_entropy(logits, target, soft_label=True))


def optimizer():
    schedule = paddle.optimizer.lr.LinearWarmup(paddle.optimizer.lr.CosineAnnealingDecay(LR, T_MAX), WARMUP, 0.0, LR)
    return schedule, paddle.optimizer.AdamW(
        schedule, weight_decay=DECAY, grad_clip=nn.ClipGradByGlobalNorm(CLIP),
        apply_decay_param_fun=lambda name: not any(part in name for part in NO_DECAY))


def images(count: int) -> np.ndarray:
    """8-bit pixels normalised as a ViT's transforms do: (x / 255 - 0.5) / 0.5."""
    return (RNG.integers(0, 256, (count, 3, IMAGE, IMAGE)) / 127.5 - 1).astype(np.float32)


def half_permutations(count: int) -> np.ndarray:
    """Each batch's mixup partners from within its own half, so two micro-batches of 4 mix as the batch of 8 does."""
    half = BATCH // 2
    return np.concatenate([RNG.permutation(half) for _ in range(2 * count)]).astype(np.int64)


def batches() -> dict:
    size = STEPS * BATCH
    halves = half_permutations(STEPS).reshape(STEPS, 2, BATCH // 2) + np.array([0, BATCH // 2])[:, None]
    data = {"image": images(size), "label": RNG.integers(0, CLASSES, size).astype(np.int64),
            "perm": halves.reshape(-1)}
    for i in range(2 * DEPTH):
        data[f"keep{i}"] = (RNG.random((size, 1, 1)) < KEEP).astype(np.float32)
    return data


def step_feeds(data: dict, lams: np.ndarray, size: int) -> list[dict]:
    count = len(data["image"])
    return [{**{k: v[i:i + size] for k, v in data.items()}, "lam": lams[i // size:i // size + 1]}
            for i in range(0, count, size)]


def params(scope, program) -> dict:
    return {p.name: np.array(scope.find_var(p.name).get_tensor()) for p in program.global_block().all_parameters()}


def build(merge: bool):
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 20
    with paddle.static.program_guard(main, startup), paddle.utils.unique_name.guard():
        logits, loss = vit_loss(ViT())
        forward = main.clone()
        schedule, opt = optimizer()
        if merge:
            opt = paddle.incubate.optimizer.GradientMergeOptimizer(opt, k_steps=2, avg=True)
        opt.minimize(loss)
    return main, startup, forward, logits, loss, schedule


def train(exe, program, feeds, loss, schedule, every: int = 1) -> tuple[list, list]:
    losses, rates = [], []
    for i, feed in enumerate(feeds, 1):
        rates.append(schedule.get_lr())
        losses.append(float(exe.run(program, feed=feed, fetch_list=[loss])[0]))
        if i % every == 0:
            schedule.step()
    return losses, rates


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    paddle_legacy_shim.install()   # the C-only APIs (F.gelu, paddle.matmul, ...) build only PIR ops in 3.3.1
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    meta = {}
    with paddle.static.scope_guard(paddle.static.Scope()):
        scope = paddle.static.global_scope()
        main_program, startup, forward, logits, loss, schedule = build(merge=False)
        exe.run(startup)
        data = batches()
        lams = RNG.beta(0.8, 0.8, STEPS).astype(np.float32)
        np.savez_compressed(out / "batches.npz", **data, lam=lams)
        losses, rates = train(exe, main_program, step_feeds(data, lams, BATCH), loss, schedule)
        meta["vit"] = {"loss": loss.name, "logits": logits.name, "losses": losses, "lrs": rates}
        np.savez(out / "vit_trained.npz", **params(scope, main_program))
        write_program(out / "vit.pb", main_program)
        write_program(out / "vit_forward.pb", forward)
        write_program(out / "vit_startup.pb", startup)
        test = {"image": images(TESTS), "label": RNG.integers(0, CLASSES, TESTS).astype(np.int64)}
        np.savez(out / "test.npz", **test)
        infer, infer_startup = paddle.static.Program(), paddle.static.Program()
        with paddle.static.program_guard(infer, infer_startup), paddle.utils.unique_name.guard():
            image = paddle.static.data("image", [-1, 3, IMAGE, IMAGE], "float32")
            model = ViT()
            model.eval()
            infer_logits = model(image)
        meta["infer"] = {"logits": infer_logits.name}
        with tempfile.TemporaryDirectory() as saved:
            paddle.static.save_inference_model(f"{saved}/vit", [image], [infer_logits], exe, program=infer)
            (out / "vit_infer.pdmodel.gz").write_bytes(gzip.compress(Path(f"{saved}/vit.pdmodel").read_bytes(),
                                                                     mtime=0))
            np.savez(out / "predictor.npz", **predict(f"{saved}/vit.pdmodel", f"{saved}/vit.pdiparams",
                                                      {"image": test["image"]}))
    with paddle.static.scope_guard(paddle.static.Scope()):
        merge_program, merge_startup, _, _, loss, schedule = build(merge=True)
        exe.run(merge_startup)
        micro = {k: v[:2 * BATCH] for k, v in data.items()}
        micro["perm"] = micro["perm"] % (BATCH // 2)   # the same partners, indexed within each micro-batch
        losses, _ = train(exe, merge_program, step_feeds(micro, np.repeat(lams[:2], 2), BATCH // 2), loss, schedule,
                          every=2)
        meta["merge"] = {"losses": losses}
        write_program(out / "merge.pb", merge_program)
        write_program(out / "merge_startup.pb", merge_startup)
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    pir_half(__file__, out)


def main_pir(out: Path) -> None:
    """The eval model in dygraph with Paddle's trained weights (the same generated names), saved by paddle.jit.save
    (PIR's model.json; its weights are vit_trained.npz) and run by the Predictor on the held-out images."""
    meta = json.loads((out / "meta.json").read_text())
    model = ViT()
    model.set_state_dict({key: value for key, value in zip(model.state_dict(), _trained(out, model))})
    model.eval()
    with tempfile.TemporaryDirectory() as saved:
        paddle.jit.save(model, f"{saved}/vit", input_spec=[paddle.static.InputSpec([-1, 3, IMAGE, IMAGE], "float32",
                                                                                     "image")])
        (out / "vit_pir.json.gz").write_bytes(gzip.compress(Path(f"{saved}/vit.json").read_bytes(), mtime=0))
        outputs = predict(f"{saved}/vit.json", f"{saved}/vit.pdiparams", {"image": np.load(out / "test.npz")["image"]})
    meta["pir"] = {"logits": next(iter(outputs))}
    np.savez(out / "predictor_pir.npz", **outputs)
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


def _trained(out: Path, model) -> list:
    """Paddle's trained values in the order of the model's state_dict, by the parameters' generated names."""
    trained = np.load(out / "vit_trained.npz")
    return [trained[param.name] for param in model.state_dict().values()]


if __name__ == "__main__":
    script_main(main, main_pir)
