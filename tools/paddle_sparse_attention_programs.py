"""PIR programs of Paddle 3.3.1's sparse_attention (gradc.ops.sparse_attention), which its CPU build cannot run (a
CUDA kernel only): each case writes the legacy sparse_attention op and its grad op (the slots Paddle's grad maker,
core.get_grad_op_desc, gives it) into a legacy ProgramDesc and lets Paddle's translator name the PIR ops, operands and
results (paddle_gpu_only_translated.translated_program). The numbers come from Paddle too: its CPU run, in dygraph
mode, of the same attention composed of ops it has CPU kernels for (matmul, scale by 1 / sqrt(d), -inf off the CSR
layout and where a mask is 0, softmax, matmul; SparseDotSdd and Softmax gathered at the layout's entries), and the
gradients at the fed out grad, into expected.npz. Written as tests/data/paddle/pir_gpu_only/<case>/program.json,
feed.npz, expected.npz and meta.json; tests/test_flash_attention_v3.py runs them. Not part of the package: it needs
paddlepaddle.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_sparse_attention_programs.py
"""

from __future__ import annotations

import json
import sys
import warnings

import numpy as np
import paddle
import paddle.nn.functional as F
import paddle_gpu_only_translated as translated

translated.PIR_RESULT_NAMES |= {"SparseDotSdd": "sparse_dot_sdd"}


def _case(b: int, h: int, s: int, d: int, dtype: str, row_lengths: list[list[int]], masks: bool) -> dict:
    """sparse_attention of Q, K, V [b, h, s, d] over a layout whose head (b, h) gives row i row_lengths[h][i] keys
    (the same total per head: Columns is one [b, h, nnz] tensor), and its grad op at a fed Out grad."""
    nnz = sum(row_lengths[0])
    shapes = {"Q": [b, h, s, d], "K": [b, h, s, d], "V": [b, h, s, d]}
    feeds = {name.lower(): (shape, dtype) for name, shape in shapes.items()} | {
        "offset": ([b, h, s + 1], "int32"), "columns": ([b, h, nnz], "int32"), "dout": ([b, h, s, d], dtype)}
    ins = {slot: [slot.lower()] for slot in (*shapes, "Offset", "Columns")}
    if masks:
        feeds |= {"key_padding_mask": ([b, s], dtype), "attn_mask": ([s, s], dtype)}
        ins |= {"KeyPaddingMask": ["key_padding_mask"], "AttnMask": ["attn_mask"]}
    outs = {"Out": ("out", [b, h, s, d], dtype), "SparseDotSdd": ("sparse_dot_sdd", [b, h, nnz], dtype),
            "Softmax": ("softmax", [b, h, nnz], dtype)}
    grad_ins = {slot: ins[slot] for slot in (*shapes, "Offset", "Columns")} | {
        "SparseDotSdd": ["sparse_dot_sdd"], "Softmax": ["softmax"], "Out@GRAD": ["dout"]}
    grads = {f"{slot}@GRAD": (f"{slot.lower()}@GRAD", shape, dtype) for slot, shape in shapes.items()}
    ops = [("sparse_attention", ins, outs, {}), ("sparse_attention_grad", grad_ins, grads, {})]
    return {"feeds": feeds, "ops": ops, "row_lengths": row_lengths}


CASES = {
    "sparse_attention_masks": _case(2, 2, 5, 8, "float32", [[3] * 5, [3] * 5], True),
    "sparse_attention_rows_f64": _case(1, 2, 4, 4, "float64", [[4, 0, 2, 2], [1, 3, 2, 2]], False),
}


def _feed(rng, spec: dict, name: str, shape: list[int], dtype: str) -> np.ndarray:
    b, h, s = shape[0], shape[1], len(spec["row_lengths"][0])
    if name in ("offset", "columns"):   # row i of head hi: row_lengths[hi][i] distinct keys, drawn in order
        offset = np.zeros((b, h, s + 1), np.int32)
        columns = np.zeros((b, h, sum(spec["row_lengths"][0])), np.int32)
        for bi, hi in np.ndindex(b, h):
            lengths = spec["row_lengths"][hi]
            offset[bi, hi, 1:] = np.cumsum(lengths)
            columns[bi, hi] = np.concatenate([np.sort(rng.choice(s, n, replace=False)) for n in lengths])
        return offset if name == "offset" else columns
    if name == "key_padding_mask":   # key 1 of batch 1 masked (Paddle's kernel reads batch 0's row for every batch)
        mask = np.ones(shape, dtype)
        mask[1, 1] = 0
        return mask
    if name == "attn_mask":   # row 0 does not see keys 0 and 2, row 3 not key 4
        mask = np.ones(shape, dtype)
        mask[0, [0, 2]] = mask[3, 4] = 0
        return mask
    return rng.standard_normal(shape).astype(dtype)


def _reference(v: dict) -> dict:
    """Dense attention with -inf off the layout and on masked entries (a row with none left is 0), gathered."""
    t = {name: paddle.to_tensor(v[name], stop_gradient=False) for name in ("q", "k", "v")}
    b, h, s, d = v["q"].shape
    rows = np.stack([np.repeat(np.arange(s), np.diff(v["offset"][bi, hi])) for bi, hi in np.ndindex(b, h)])
    rows = rows.reshape(b, h, -1)
    keep = np.zeros((b, h, s, s), bool)
    for bi, hi in np.ndindex(b, h):
        keep[bi, hi, rows[bi, hi], v["columns"][bi, hi]] = True
    if "key_padding_mask" in v:
        keep &= (v["key_padding_mask"] != 0)[:, None, None, :] & (v["attn_mask"] != 0)[None, None]
    raw = paddle.matmul(t["q"], t["k"], transpose_y=True)
    alive = keep.any(-1, keepdims=True)   # a row with no key: finite scores, then its probabilities zeroed
    bias = np.where(keep | ~alive, 0, -np.inf).astype(v["q"].dtype)
    probs = F.softmax(raw * (1 / np.sqrt(d)) + paddle.to_tensor(bias), -1) * paddle.to_tensor(alive.astype(
        v["q"].dtype))
    out = paddle.matmul(probs, t["v"])
    grads = paddle.grad([out], list(t.values()), [paddle.to_tensor(v["dout"])])
    index = np.indices(rows.shape)
    at = (index[0], index[1], rows, v["columns"])
    return {"out": out.numpy(), "sparse_dot_sdd": raw.numpy()[at], "softmax": probs.numpy()[at]} | {
        f"{name}@GRAD": g.numpy() for name, g in zip(t, grads)}


def write(case: str, seed: int) -> str:
    spec = CASES[case]
    program, fetches = translated.translated_program(spec)
    directory = translated.saved(program, case)
    rng = np.random.default_rng(seed)
    feed = {name: _feed(rng, spec, name, *spec["feeds"][name]) for name in spec["feeds"]}
    np.savez_compressed(directory / "feed.npz", **feed)
    with paddle.base.dygraph.guard(paddle.CPUPlace()):
        np.savez_compressed(directory / "expected.npz", **_reference(feed))
    ops = sorted({op.name() for op in program.global_block().ops} - {"pd_op.fetch"})
    meta = {"case": case, "paddle_version": paddle.__version__, "fetches": fetches, "pir_ops": ops,
            "built_by": "legacy ops written into a ProgramDesc, translated by Paddle; expected.npz: Paddle's CPU "
                        "composition (dense attention masked off the CSR layout)"}
    (directory / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return f"{ops}"


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    paddle.enable_static()
    for index, case in enumerate(CASES):
        print(f"{case}: {write(case, 900 + index)}")
    sys.exit(0)
