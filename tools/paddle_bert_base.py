"""A BERT-base / ERNIE-base sized encoder stack (hidden 768, 12 heads, intermediate 3072, GELU, post-norm, dropout 0:
the layers PaddleNLP's BertModel and ErnieModel stack, `paddle.nn.TransformerEncoderLayer`) in legacy static mode,
built by Paddle in float32 and in float64 with the same parameters (tests/seeded_params.py's values by name, the
float64 build given them widened), with a BERT padding mask (the last 3 of row 0's 8 tokens masked, -1e4 added) and
loss mean(out * w). How close gradc's float32 is to Paddle's float64, against how close Paddle's float32 is:

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_bert_base.py paddle OUT_DIR
    PYTHONPATH=src .venv/bin/python tools/paddle_bert_base.py gradc OUT_DIR
    .venv/bin/python tools/paddle_bert_base.py fixture OUT_DIR tests/data/paddle/bert_base

The Paddle step writes OUT_DIR/f32 and OUT_DIR/f64: forward.pb (the forward and its loss), loss.npy, grads.npz (every
parameter's gradient, whole), and OUT_DIR/feed.npz, meta.json. The gradc step compiles each forward with gradc's
backward and prints the three furthest gradients from Paddle's float64 (of its own largest) for Paddle's float32,
gradc's float32 and gradc's float64. The fixture keeps both forwards, the feed, the losses and each gradient as
tests/seeded_params.py's stored_grad keeps it (32 entries of a large one).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from seeded_params import param_value, seeded_grads, stored_grad  # noqa: E402

SEED, BATCH, TOKENS, HIDDEN, HEADS, INTERMEDIATE, LAYERS = 3, 2, 8, 768, 12, 3072, 2


def _feed() -> dict:
    rng = np.random.default_rng(SEED)
    mask = np.zeros((BATCH, 1, 1, TOKENS))
    mask[0, ..., TOKENS - 3:] = -1e4   # BERT's (1 - attention_mask) * -1e4 of a padded row
    return {"hidden": rng.standard_normal((BATCH, TOKENS, HIDDEN)), "mask": mask,
            "w": rng.standard_normal((BATCH, TOKENS, HIDDEN))}


def _paddle_build(dtype: str, out: Path, feed: dict) -> None:
    import paddle
    from paddle_programs import without_callstacks
    paddle.set_default_dtype(dtype)
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        hidden, mask, weight = (paddle.static.data(name, [BATCH, *value.shape[1:]], dtype)
                                for name, value in feed.items())
        layer = paddle.nn.TransformerEncoderLayer(HIDDEN, HEADS, INTERMEDIATE, dropout=0.0, activation="gelu")
        encoded = paddle.nn.TransformerEncoder(layer, LAYERS)(hidden, src_mask=mask)
        loss = paddle.mean(encoded * weight)
        forward = main.clone()
        pairs = paddle.static.append_backward(loss)
    out.mkdir(parents=True, exist_ok=True)
    (out / "forward.pb").write_bytes(without_callstacks(forward))
    exe, scope = paddle.static.Executor(paddle.CPUPlace()), paddle.static.global_scope()
    exe.run(startup)
    for param, _ in pairs:
        scope.find_var(param.name).get_tensor().set(param_value(param.name, list(param.shape), SEED).astype(dtype),
                                                    paddle.CPUPlace())
    value, *grads = exe.run(main, feed={k: v.astype(dtype) for k, v in feed.items()},
                            fetch_list=[loss] + [grad for _, grad in pairs])
    np.save(out / "loss.npy", np.asarray(value))
    np.savez(out / "grads.npz", **{f"{param.name}@GRAD": np.asarray(g) for (param, _), g in zip(pairs, grads)})
    (out / "meta.json").write_text(json.dumps({"loss": loss.name, "seed": SEED, "dtype": dtype,
                                               "ops": sorted({op.type for op in forward.global_block().ops})}))


def paddle_step(out: Path) -> None:
    import paddle
    from paddle_legacy_shim import install
    install()   # 3.3.1's paddle.matmul, ... have no legacy static path of their own
    paddle.enable_static()
    feed = _feed()
    out.mkdir(parents=True, exist_ok=True)
    np.savez(out / "feed.npz", **feed)
    for dtype in ("float32", "float64"):
        _paddle_build(dtype, out / dtype.replace("float", "f"), feed)


def furthest(ours: dict, theirs: dict, dtype) -> list[tuple[float, str]]:
    """The gradient furthest from ``theirs``, as a share of that gradient's largest magnitude or, for one zero but
    for rounding (the attention keys' biases, which softmax cancels), of 100 ulps of ``dtype`` of the largest
    gradient (as tools/real_models.py measures)."""
    floor = 100 * np.finfo(dtype).eps * max(float(np.abs(value).max()) for value in theirs.values())
    return sorted(((float(np.abs(np.asarray(ours[n], np.float64) - theirs[n]).max()
                        / max(float(np.abs(theirs[n]).max()), floor)), n) for n in theirs), reverse=True)[:3]


def gradc_step(out: Path) -> None:
    feed = dict(np.load(out / "feed.npz"))
    reference = dict(np.load(out / "f64" / "grads.npz"))
    paddle32 = dict(np.load(out / "f32" / "grads.npz"))
    loss32, ours32 = seeded_grads(out / "f32", feed)
    loss64, ours64 = seeded_grads(out / "f64", feed)
    paddle_distance = furthest(paddle32, reference, np.float32)
    gradc_distance = furthest(ours32, reference, np.float32)
    print(json.dumps({"loss": {"paddle32": float(np.load(out / "f32" / "loss.npy")), "gradc32": float(loss32),
                               "paddle64": float(np.load(out / "f64" / "loss.npy")), "gradc64": float(loss64)},
                      "paddle32_vs_paddle64": paddle_distance, "gradc32_vs_paddle64": gradc_distance,
                      "ratio": gradc_distance[0][0] / paddle_distance[0][0],
                      "gradc64_vs_paddle64": furthest(ours64, reference, np.float64)}, indent=1))


def write_fixture(case: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(case / "feed.npz", out / "feed.npz")
    for part in ("f32", "f64"):
        (out / part).mkdir(exist_ok=True)
        for name in ("forward.pb", "loss.npy", "meta.json"):
            shutil.copy(case / part / name, out / part / name)
        grads = np.load(case / part / "grads.npz")
        np.savez_compressed(out / part / "grads.npz", **{n: stored_grad(n, grads[n]) for n in grads.files})


def main() -> None:
    step, out = sys.argv[1], Path(sys.argv[2]).resolve()
    if step == "paddle":
        paddle_step(out)
    elif step == "gradc":
        gradc_step(out)
    else:
        write_fixture(out, Path(sys.argv[3]))


if __name__ == "__main__":
    main()
