"""Paddle 3.3.1's values of the static_nn family's ops on fixed inputs, for tests/test_static_nn.py:
nce (each sampler, fixed negatives: forward, loss gradients), viterbi_decode (both tag modes, sequences of every
length, 0 too) and auc (slide_steps 0 and more, several batches). Not part of the package: it needs paddlepaddle.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_static_nn_reference.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import paddle
from paddle import _C_ops
from paddle.base.backward import append_backward

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "static_nn_reference.npz"
CLASSES, DIM = 6, 4
PROBS = np.array([0.1, 0.2, 0.3, 0.15, 0.15, 0.1], "float32")


def nce_case(rng, sampler: int, trues: int, negatives: list[int], weighted: bool) -> dict[str, np.ndarray]:
    """One nce op with loss = sum(Cost * lw), run and differentiated by Paddle's legacy executor."""
    main, startup = paddle.static.Program(), paddle.static.Program()
    feed = {"x": rng.standard_normal((3, DIM)), "lab": rng.integers(0, CLASSES, (3, trues)),
            "w": rng.standard_normal((CLASSES, DIM)), "b": rng.standard_normal((CLASSES, 1)),
            "sw": rng.uniform(0.5, 2, (3, 1)), "lw": rng.standard_normal((3, 1)), "p": PROBS,
            "alias": np.zeros(CLASSES, "int32"), "aprobs": np.ones(CLASSES, "float32")}
    feed = {k: v.astype("float32") if v.dtype == np.float64 else v for k, v in feed.items()}
    with paddle.static.program_guard(main, startup):
        block = main.global_block()
        var = {k: paddle.static.data(k, list(v.shape), v.dtype.name) for k, v in feed.items()}
        for k in ("x", "w", "b"):
            var[k].stop_gradient = False
        cost, logits, labels = (block.create_var(name=n, dtype=d) for n, d in
                                (("cost", "float32"), ("logits", "float32"), ("labels", "int64")))
        inputs = {"Input": var["x"], "Label": var["lab"], "Weight": var["w"], "Bias": var["b"]}
        if weighted:
            inputs["SampleWeight"] = var["sw"]
        if sampler == 2:
            inputs |= {"CustomDistProbs": var["p"], "CustomDistAlias": var["alias"],
                       "CustomDistAliasProbs": var["aprobs"]}
        block.append_op(type="nce", inputs=inputs, outputs={"Cost": cost, "SampleLogits": logits,
                                                            "SampleLabels": labels},
                        attrs={"num_total_classes": CLASSES, "num_neg_samples": len(negatives), "sampler": sampler,
                               "seed": 1, "custom_neg_classes": negatives, "is_sparse": False})
        cost.stop_gradient = False
        product = block.create_var(name="product", dtype="float32", shape=[3, 1])
        loss = block.create_var(name="loss", dtype="float32", shape=[])
        block.append_op(type="elementwise_mul", inputs={"X": cost, "Y": var["lw"]}, outputs={"Out": product},
                        attrs={"axis": -1})
        block.append_op(type="reduce_sum", inputs={"X": product}, outputs={"Out": loss},
                        attrs={"reduce_all": True, "dim": [], "keep_dim": False})
        append_backward(loss)
    exe = paddle.static.Executor()
    exe.run(startup)
    names = ["cost", "logits", "labels", "x@GRAD", "w@GRAD", "b@GRAD"]
    return feed | dict(zip(names, exe.run(main, feed=feed, fetch_list=names)))


def main() -> None:
    rng = np.random.default_rng(5)
    arrays = {}
    paddle.enable_static()
    for i, (sampler, trues, negatives, weighted) in enumerate(((0, 1, [2, 5], False), (1, 2, [0, 4, 5], True),
                                                                (2, 1, [1, 3], True))):
        case = nce_case(rng, sampler, trues, negatives, weighted)
        arrays |= {f"nce{i}/{k}": v for k, v in case.items()}
        arrays[f"nce{i}/attrs"] = np.array([sampler, int(weighted), *negatives])
    paddle.disable_static()
    for i, (tags, lengths) in enumerate((t, l) for t in (True, False)
                                        for l in ([3, 2], [4, 1], [1, 1], [4, 4], [2, 3], [0, 2], [3, 0])):
        e, t = rng.standard_normal((2, 4, 5)).astype("float32"), rng.standard_normal((5, 5)).astype("float32")
        scores, path = paddle.text.viterbi_decode(paddle.to_tensor(e), paddle.to_tensor(t),
                                                  paddle.to_tensor(np.array(lengths, "int64")), tags)
        arrays |= {f"viterbi{i}/input": e, f"viterbi{i}/transition": t, f"viterbi{i}/length": np.array(lengths),
                   f"viterbi{i}/tags": np.array(tags), f"viterbi{i}/scores": scores.numpy(),
                   f"viterbi{i}/path": path.numpy()}
    for i, (steps, thresholds) in enumerate(((0, 7), (1, 7), (3, 5))):
        size = thresholds + 1 if steps == 0 else (steps + 1) * (thresholds + 1) + 1
        pos, neg = paddle.zeros([size], "int64"), paddle.zeros([size], "int64")
        arrays[f"auc{i}/attrs"] = np.array([steps, thresholds])
        for run in range(5):
            p = rng.uniform(0, 1, (6, 1)).astype("float32")
            p[0], p[1] = 1.0, 0.0   # both ends of the histogram
            label = rng.integers(-1, 2, (6, 1)).astype("int64")   # -1: not counted
            auc, pos, neg = _C_ops.auc(paddle.to_tensor(p), paddle.to_tensor(label), pos, neg, None, "ROC",
                                       thresholds, steps)
            arrays |= {f"auc{i}/predict{run}": p, f"auc{i}/label{run}": label, f"auc{i}/auc{run}": auc.numpy(),
                       f"auc{i}/pos{run}": pos.numpy(), f"auc{i}/neg{run}": neg.numpy()}
    np.savez_compressed(OUT, **arrays)
    print(f"wrote {OUT} ({len(arrays)} arrays)")


if __name__ == "__main__":
    main()
