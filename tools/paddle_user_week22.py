"""The metric-learning engineer's programs of docs/tools.md's 'A metric-learning engineer's week', written with Paddle
3.3.1's ops (legacy static mode, CPU):

- clip.pb: a CLIP-style two-tower model: an image tower (an MLP 12 -> 16 -> 8 over image features) and a text tower
  (an embedding of 20 tokens, mean pooling over 5 positions, a linear 8 -> 8), both F.normalize'd; a learnable logit
  scale (exp of a parameter clipped to [0, log 100], initially log(1/0.07)); the similarity matrix by matmul; the
  symmetric InfoNCE loss (cross-entropy with labels arange(8) over rows and over columns, halved). Adam, 4 steps.
- arcface.pb: a face-recognition head: an MLP embedding normalized, class centres normalized along their axis 0, the
  cosines clipped to +-(1 - 1e-6), ArcFace's cos(theta + 0.5) by acos and cos on the target class by a one-hot mask,
  scale 16, cross-entropy (paddle's margin_cross_entropy has no CPU kernel: "Do not support margin_cross_entropy for
  cpu kernel now"). Momentum 0.9, 4 steps.
- triplet.pb: a batch-hard triplet loss (margin 0.3) over the image tower's normalized embeddings: squared distances
  by matmul, the hardest positive by where + argmax, the hardest negative by where + argmin, index_sample of both.
  SGD, 4 steps.

Written (programs gzipped): clip.pb, arcface.pb, triplet.pb (each the forward with its loss, cloned before minimize),
their startup programs' initial values in init_clip.npz, init_arcface.npz, init_triplet.npz; data.npz (the examples);
image_tower.pdmodel.gz and text_tower.pdmodel.gz (save_inference_model of each tower alone from the trained CLIP scope,
their weights in clip_trained.npz); predictor.npz (each tower's Predictor embeddings of the gallery, and Paddle's
recall@1 and @5 of text-to-image retrieval); meta.json (the losses per step of Paddle's minimize, the vars' names,
Paddle's float32 gradient of acos at 4 cosines near the clip).

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week22.py tests/data/paddle/user_week22
"""

import gzip
import json
import math
import sys
import tempfile
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
import paddle_legacy_shim
from paddle.base.layer_helper import LayerHelper
from paddle_programs import predict, without_callstacks

FEATURES, HIDDEN, EMBED, VOCAB, WORDS, CLASSES = 12, 16, 8, 20, 5, 6
BATCH, STEPS, GALLERY = 8, 4, 16
ARC_MARGIN, ARC_SCALE, COS_CLIP, TRIPLET_MARGIN = 0.5, 16.0, 1e-6, 0.3
NEAR_CLIP = 4.6   # a logit scale of 99.5, just under the clip's log(100)
RNG = np.random.default_rng(22)
CENTRES = RNG.standard_normal((CLASSES, FEATURES))   # each class's mean image features


def write_program(path: Path, program) -> None:
    path.with_name(path.name + ".gz").write_bytes(gzip.compress(without_callstacks(program), mtime=0))


def normalize(x, axis):
    """F.normalize's legacy ops (p_norm, then x / max(norm, 1e-12)): in Paddle 3.3.1's legacy static mode
    F.normalize appends them and then raises "cannot access local variable 'ret'"."""
    helper = LayerHelper("p_norm")
    norm = helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op(type="p_norm", inputs={"X": x}, outputs={"Out": norm},
                     attrs={"axis": axis, "porder": 2.0, "keepdim": True, "epsilon": 1e-12})
    return paddle.divide(x, paddle.maximum(norm, paddle.full([1], 1e-12, x.dtype)))


def image_tower(images):
    hidden = paddle.static.nn.fc(images, HIDDEN, activation="relu", name="img_fc1")
    return normalize(paddle.static.nn.fc(hidden, EMBED, name="img_fc2"), axis=-1)


def text_tower(tokens):
    words = paddle.static.nn.embedding(tokens, [VOCAB, EMBED], param_attr=paddle.ParamAttr(name="word_embed"))
    pooled = paddle.mean(words, axis=1)
    return normalize(paddle.static.nn.fc(pooled, EMBED, name="txt_fc"), axis=-1)


def clip_loss(image_embed, text_embed):
    scale_param = paddle.static.create_parameter(
        [1], "float32", name="logit_scale",
        default_initializer=paddle.nn.initializer.Constant(math.log(1 / 0.07)))
    scale = paddle.exp(paddle.clip(scale_param, 0.0, math.log(100.0)))
    logits = paddle.matmul(image_embed, text_embed, transpose_y=True) * scale
    labels = paddle.unsqueeze(paddle.arange(0, BATCH, dtype="int64"), 1)
    return (F.cross_entropy(logits, labels) + F.cross_entropy(paddle.transpose(logits, [1, 0]), labels)) / 2


def arcface_loss(images, labels):
    embed = normalize(paddle.static.nn.fc(paddle.static.nn.fc(images, HIDDEN, activation="relu", name="face_fc1"),
                                            EMBED, name="face_fc2"), axis=1)
    centres = paddle.static.create_parameter([EMBED, CLASSES], "float32", name="class_centres")
    cosine = paddle.clip(paddle.matmul(embed, normalize(centres, axis=0)), -1 + COS_CLIP, 1 - COS_CLIP)
    target = paddle.cos(paddle.acos(cosine) + ARC_MARGIN)
    one_hot = F.one_hot(paddle.squeeze(labels, 1), CLASSES)
    logits = (one_hot * target + (1 - one_hot) * cosine) * ARC_SCALE
    return F.cross_entropy(logits, labels)


def triplet_loss(images, labels):
    embed = image_tower(images)
    distance = 2 - 2 * paddle.matmul(embed, embed, transpose_y=True)   # squared, of unit vectors
    same = paddle.equal(labels, paddle.transpose(labels, [1, 0]))
    positive = paddle.argmax(paddle.where(same, distance, paddle.full_like(distance, -1.0)), axis=1, keepdim=True)
    negative = paddle.argmin(paddle.where(same, paddle.full_like(distance, 1e4), distance), axis=1, keepdim=True)
    hardest = paddle.index_sample(distance, positive) - paddle.index_sample(distance, negative)
    return paddle.mean(F.relu(hardest + TRIPLET_MARGIN))


def programs(kind: str):
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 22
    with paddle.static.program_guard(main, startup), paddle.utils.unique_name.guard():
        images = paddle.static.data("image", [-1, FEATURES], "float32")
        if kind == "clip":
            tokens = paddle.static.data("tokens", [-1, WORDS], "int64")
            image_embed, text_embed = image_tower(images), text_tower(tokens)
            loss = clip_loss(image_embed, text_embed)
            outputs = {"image_embed": image_embed.name, "text_embed": text_embed.name}
        else:
            labels = paddle.static.data("label", [-1, 1], "int64")
            loss = (arcface_loss if kind == "arcface" else triplet_loss)(images, labels)
            outputs = {}
        forward = main.clone()
        optimizer = {"clip": paddle.optimizer.Adam(0.01),
                     "arcface": paddle.optimizer.Momentum(0.05, momentum=0.9),
                     "triplet": paddle.optimizer.SGD(0.1)}[kind]
        optimizer.minimize(loss)
    return main, forward, startup, loss, outputs


def examples() -> dict:
    """Pairs: each caption's tokens drawn from its image's class's words; class labels for the two other losses."""
    count = BATCH * STEPS
    classes = np.tile(np.arange(CLASSES), count // CLASSES + 1)[:count]
    RNG.shuffle(classes)
    images = (CENTRES[classes] + 0.7 * RNG.standard_normal((count, FEATURES))).astype(np.float32)
    tokens = (classes[:, None] * 3 + RNG.integers(0, 3, (count, WORDS))) % VOCAB + 1
    return {"image": images, "tokens": tokens.astype(np.int64), "label": classes[:, None].astype(np.int64)}


def params(scope, program) -> dict:
    return {p.name: np.array(scope.var(p.name).get_tensor()) for p in program.global_block().all_parameters()}


def recall_at(image_embed: np.ndarray, text_embed: np.ndarray, k: int) -> float:
    """Text-to-image retrieval: the share of captions whose own image is among the k most similar."""
    ranks = np.argsort(-(text_embed @ image_embed.T), axis=1)[:, :k]
    return float(np.mean([i in row for i, row in enumerate(ranks)]))


def main(out: Path) -> None:
    paddle_legacy_shim.install()
    paddle.enable_static()
    data = examples()
    np.savez(out / "data.npz", **data)
    exe = paddle.static.Executor(paddle.CPUPlace())
    meta = {}
    for kind in ("clip", "arcface", "triplet"):
        with paddle.static.scope_guard(paddle.static.Scope()):
            main_program, forward, startup, loss, outputs = programs(kind)
            exe.run(startup)
            scope = paddle.static.global_scope()
            initial = params(scope, main_program)
            np.savez(out / f"init_{kind}.npz", **initial)
            names = ("image", "tokens") if kind == "clip" else ("image", "label")
            losses = [float(exe.run(main_program, feed={n: data[n][s * BATCH:(s + 1) * BATCH] for n in names},
                                    fetch_list=[loss])[0]) for s in range(STEPS)]
            meta[kind] = {"loss": loss.name, "losses": losses, **outputs}
            write_program(out / f"{kind}.pb", forward)
            if kind == "clip":
                np.savez(out / "clip_trained.npz", **params(scope, main_program))
                meta["clip"] |= export_towers(out, exe, forward, outputs)
                meta["clip"]["near_the_clip"] = near_the_clip(exe, forward, loss.name, data, initial)
    meta["acos_near_clip"] = acos_gradients()
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


def near_the_clip(exe, forward, loss_name: str, data: dict, initial: dict) -> dict:
    """Paddle's loss and gradient of the logit scale at NEAR_CLIP (exp: 99.5) on the first batch from the initial
    values, by its executor's backward of the forward program."""
    program = forward.clone()
    with paddle.static.program_guard(program):
        block = program.global_block()
        (grad,) = paddle.static.gradients([block.var(loss_name)], [block.var("logit_scale")])
    scope = paddle.static.global_scope()
    for name, value in (initial | {"logit_scale": np.float32([NEAR_CLIP])}).items():
        scope.var(name).get_tensor().set(value, paddle.CPUPlace())
    feed = {name: data[name][:BATCH] for name in ("image", "tokens")}
    value, gradient = exe.run(program, feed=feed, fetch_list=[block.var(loss_name), grad])
    return {"logit_scale": NEAR_CLIP, "loss": float(value), "grad": float(gradient[0])}


def acos_gradients() -> dict:
    """Paddle's float32 gradient of acos at cosines near ArcFace's clip (1 - 1e-6), by its executor's backward."""
    cosines = np.float32([0.999, 0.9999, 0.99999, 1 - COS_CLIP])
    main_program, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main_program, startup):
        x = paddle.static.data("x", [4], "float32")
        x.stop_gradient = False
        (grad,) = paddle.static.gradients([paddle.sum(paddle.acos(x))], [x])
    exe = paddle.static.Executor(paddle.CPUPlace())
    (value,) = exe.run(main_program, feed={"x": cosines}, fetch_list=[grad])
    return {"x": cosines.tolist(), "paddle": value.tolist()}


def export_towers(out: Path, exe, forward, outputs: dict) -> dict:
    """Each tower saved alone (save_inference_model with one tower's embedding) and run by Paddle's Predictor on a
    gallery of new pairs; recall@1 and @5 of captions to images from those embeddings."""
    gallery = examples()
    gallery = {name: value[:GALLERY] for name, value in gallery.items()}
    embeddings = {}
    with tempfile.TemporaryDirectory() as saved:
        block = forward.global_block()
        for tower, feed in (("image", "image"), ("text", "tokens")):
            paddle.static.save_inference_model(f"{saved}/{tower}", [block.var(feed)],
                                               [block.var(outputs[f"{tower}_embed"])], exe, program=forward)
            (out / f"{tower}_tower.pdmodel.gz").write_bytes(
                gzip.compress(Path(f"{saved}/{tower}.pdmodel").read_bytes(), mtime=0))
            (embeddings[tower],) = predict(f"{saved}/{tower}.pdmodel", f"{saved}/{tower}.pdiparams",
                                           {feed: gallery[feed]}).values()
    np.savez(out / "predictor.npz", image_embed=embeddings["image"], text_embed=embeddings["text"],
             gallery_image=gallery["image"], gallery_tokens=gallery["tokens"])
    return {"recall": {k: recall_at(embeddings["image"], embeddings["text"], k) for k in (1, 5)}}


if __name__ == "__main__":
    Path(sys.argv[1]).mkdir(parents=True, exist_ok=True)
    main(Path(sys.argv[1]))
