"""PIR programs of Paddle 3.3.1's FlashAttention ops (gradc.ops.flash_attention), which its CPU build cannot run or
build with its PIR API (no kernel): each case writes the legacy forward op and its grad op (or flash_attn and
calc_reduced_attn_scores of its softmax_lse) straight into a legacy ProgramDesc and lets Paddle's translator name
the PIR ops, operands, results and attributes (paddle_gpu_only_translated.translated_program). The numbers come
from Paddle too: its CPU run, in dygraph mode, of the same attention composed of ops it has CPU kernels for
(scaled_dot_product_attention's math path, with repeat_interleave for grouped heads, the dense mask
flashmask_attention's docstring converts its row indices to, each sequence of the unpadded op on its own, the
kernel's slices of a packed qkv; logsumexp and exp for the reduced scores), and the gradients at the fed out grad,
into expected.npz. Written as tests/data/paddle/pir_gpu_only/<case>/program.json, feed.npz, expected.npz and
meta.json; tests/test_flash_attention.py runs them. Not part of the package: it needs paddlepaddle.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_flash_attention_programs.py [case ...]
"""

from __future__ import annotations

import json
import sys
import warnings

import numpy as np
import paddle
import paddle.nn.functional as F
import paddle_gpu_only_translated as translated

F32, F64, I32 = "float32", "float64", "int32"
ATTRS = {"dropout": 0.0, "causal": False, "return_softmax": False, "is_test": False, "rng_name": ""}
STATE = ("softmax", "softmax_lse", "seed_offset")


def _ops(op: str, ins: dict, shapes: dict, dtype: str, attrs: dict, mask: str | None = None) -> list:
    """The forward op and its grad op at the fed dout (Paddle's grad maker's slots)."""
    q, k = shapes["q"], shapes["k"]
    if op == "flash_attn_unpadded":   # Paddle's infer meta: [heads, total rounded] (the kernel writes per sequence)
        rows = cols = 128 * -(-q[0] // 128)
        state = {"softmax": ("softmax", [q[1], rows, cols], dtype), "softmax_lse": ("softmax_lse", [q[1], rows])}
    else:
        rows, cols = 128 * -(-q[1] // 128), 128 * -(-k[1] // 128)
        state = {"softmax": ("softmax", [q[0], q[2], rows, cols], dtype),
                 "softmax_lse": ("softmax_lse", [q[0], q[2], rows])}
    state["seed_offset"] = ("seed_offset", [2], "int64")
    out = ("out", [*shapes["q"][:-1], shapes["v"][-1]], dtype)
    grad_ins = {**ins, "out": ["out"], "softmax_lse": ["softmax_lse"], "seed_offset": ["seed_offset"],
                "out@GRAD": ["dout"]}
    grad_ins.pop("fixed_seed_offset", None)
    grads = {f"{slot}@GRAD": (f"{slot}@GRAD", shapes[slot], dtype) for slot in ("q", "k", "v")}
    return [(op, ins, {"out": out, **state}, attrs), (f"{op}_grad", grad_ins, grads, attrs)]


def _padded(op: str, b: int, sq: int, sk: int, heads: int, kv_heads: int, dtype: str, causal: bool,
            mask: list[int] | None = None, bounds: int = 0) -> dict:
    shapes = {"q": [b, sq, heads, 8], "k": [b, sk, kv_heads, 8], "v": [b, sk, kv_heads, 8]}
    feeds = {name: (shape, dtype) for name, shape in shapes.items()} | {"dout": ([b, sq, heads, 8], dtype)}
    ins = {slot: [slot] for slot in shapes}
    if mask is not None:
        feeds["attn_mask"], ins["attn_mask"] = (mask, dtype), ["attn_mask"]
    if bounds:
        feeds["startend_row_indices"] = ([b, 1, sk, bounds], I32)
        ins["startend_row_indices"] = ["startend_row_indices"]
    feeds["fixed_seed_offset"], ins["fixed_seed_offset"] = ([2], "int64"), ["fixed_seed_offset"]
    return {"feeds": feeds, "ops": _ops(op, ins, shapes, dtype, ATTRS | {"causal": causal}),
            "reference": lambda v: _padded_reference(v, causal)}


def _unpadded(lengths: list[int], heads: int, kv_heads: int, dtype: str, causal: bool) -> dict:
    total, longest = sum(lengths), max(lengths)
    shapes = {"q": [total, heads, 8], "k": [total, kv_heads, 8], "v": [total, kv_heads, 8]}
    feeds = {name: (shape, dtype) for name, shape in shapes.items()} | {"dout": ([total, heads, 8], dtype)}
    feeds |= {"cu_seqlens_q": ([len(lengths) + 1], I32), "cu_seqlens_k": ([len(lengths) + 1], I32)}
    ins = {slot: [slot] for slot in ("q", "k", "v", "cu_seqlens_q", "cu_seqlens_k")}
    attrs = ATTRS | {"causal": causal, "scale": 0.3, "max_seqlen_q": ("_set_int64_attr", longest),
                     "max_seqlen_k": ("_set_int64_attr", longest)}
    return {"feeds": feeds, "ops": _ops("flash_attn_unpadded", ins, shapes, dtype, attrs), "lengths": lengths,
            "reference": lambda v: _unpadded_reference(v, causal, 0.3)}


def _packed(b: int, s: int, groups: int, kv_heads: int, dtype: str, causal: bool) -> dict:
    """flash_attn_qkvpacked of qkv [b, s, groups + 2, kv_heads, 8] and its grad op at a fed dout."""
    shape, heads = [b, s, groups + 2, kv_heads, 8], groups * kv_heads
    state = {"softmax": ("softmax", [b, heads, 128, 128], dtype), "softmax_lse": ("softmax_lse", [b, heads, 128]),
             "seed_offset": ("seed_offset", [2], "int64")}
    attrs = ATTRS | {"causal": causal}
    grad_ins = {"qkv": ["qkv"], "out": ["out"], "softmax_lse": ["softmax_lse"], "seed_offset": ["seed_offset"],
                "out@GRAD": ["dout"]}
    ops = [("flash_attn_qkvpacked", {"qkv": ["qkv"]}, {"out": ("out", [b, s, heads, 8], dtype), **state}, attrs),
           ("flash_attn_qkvpacked_grad", grad_ins, {"qkv@GRAD": ("qkv@GRAD", shape, dtype)}, attrs)]
    return {"feeds": {"qkv": (shape, dtype), "dout": ([b, s, heads, 8], dtype)}, "ops": ops,
            "reference": lambda v: _packed_reference(v, causal)}


def _reduced(b: int, s: int, heads: int, kv_heads: int) -> dict:
    """flash_attn (causal) and calc_reduced_attn_scores of its softmax_lse."""
    shapes = {"q": [b, s, heads, 8], "k": [b, s, kv_heads, 8], "v": [b, s, kv_heads, 8]}
    state = {"softmax": ("softmax", [b, heads, 128, 128]), "softmax_lse": ("softmax_lse", [b, heads, 128]),
             "seed_offset": ("seed_offset", [2], "int64")}
    ops = [("flash_attn", {slot: [slot] for slot in shapes}, {"out": ("out", [b, s, heads, 8]), **state},
            ATTRS | {"causal": True}),
           ("calc_reduced_attn_scores", {"q": ["q"], "k": ["k"], "softmax_lse": ["softmax_lse"]},
            {"reduced_scores": ("reduced_scores", [b, heads, 1, s])}, {})]
    return {"feeds": {name: (shape, F32) for name, shape in shapes.items()}, "ops": ops,
            "reference": _reduced_reference}


def _reduced_reference(v: dict) -> dict:
    """Every row's probabilities against every key with the causal row's log sum exp, summed over the rows."""
    q, k = (paddle.to_tensor(v[name]) for name in ("q", "k"))
    k = paddle.repeat_interleave(k, q.shape[2] // k.shape[2], axis=2)
    scores = paddle.matmul(q.transpose([0, 2, 1, 3]), k.transpose([0, 2, 1, 3]), transpose_y=True) / np.sqrt(8)
    causal = paddle.triu(paddle.full(scores.shape[-2:], -np.inf), 1)
    lse = paddle.logsumexp(scores + causal, axis=-1, keepdim=True)
    return {"reduced_scores": paddle.exp(scores - lse).sum(axis=2, keepdim=True).numpy()}


def _attention(q, k, v, mask, causal: bool, scale: float | None = None):
    """Paddle's CPU composition: k and v spread to the query heads, then sdpa's math path."""
    groups = q.shape[2] // k.shape[2]
    k, v = (paddle.repeat_interleave(x, groups, axis=2) if groups > 1 else x for x in (k, v))
    if scale is not None:   # sdpa scales by 1 / sqrt(head_dim): fold the unpadded op's own scale into q
        q = q * (scale * float(np.sqrt(q.shape[-1])))
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)


def _dense_mask(bounds: np.ndarray, rows: int, causal: bool, dtype) -> np.ndarray:
    """flashmask_attention's startend_row_indices as the additive mask its docstring builds (flashmask_to_densemask)."""
    b, heads, cols, n = bounds.shape
    m = np.zeros((b, heads, rows, cols), dtype)
    has_end = (causal and n == 2) or (not causal and n == 4)
    for bi, hi, j in np.ndindex(b, heads, cols):
        start = bounds[bi, hi, j, 0]
        m[bi, hi, start:bounds[bi, hi, j, 1] if has_end else rows, j] = -np.inf
        if causal:
            m[bi, hi, :j, j] = -np.inf
        elif has_end:
            m[bi, hi, bounds[bi, hi, j, 2]:bounds[bi, hi, j, 3], j] = -np.inf
        else:
            m[bi, hi, :bounds[bi, hi, j, 1], j] = -np.inf
    return m


def _grads(out, inputs: dict, dout) -> dict:
    grads = paddle.grad([out], list(inputs.values()), [paddle.to_tensor(dout)])
    return {"out": out.numpy()} | {f"{name}@GRAD": g.numpy() for name, g in zip(inputs, grads)}


def _padded_reference(v: dict, causal: bool) -> dict:
    t = {name: paddle.to_tensor(v[name], stop_gradient=False) for name in ("q", "k", "v")}
    mask = v.get("attn_mask")
    if "startend_row_indices" in v:
        mask = _dense_mask(v["startend_row_indices"], v["q"].shape[1], causal, v["q"].dtype)
        causal = False   # the dense mask holds the causal part too
    mask = None if mask is None else paddle.to_tensor(mask)
    return _grads(_attention(t["q"], t["k"], t["v"], mask, causal), t, v["dout"])


def _unpadded_reference(v: dict, causal: bool, scale: float) -> dict:
    t = {name: paddle.to_tensor(v[name], stop_gradient=False) for name in ("q", "k", "v")}
    starts = v["cu_seqlens_q"]
    outs = [_attention(*(t[name][starts[s]:starts[s + 1]].unsqueeze(0) for name in ("q", "k", "v")), None, causal,
                       scale)[0] for s in range(len(starts) - 1)]
    return _grads(paddle.concat(outs), t, v["dout"])


def _packed_reference(v: dict, causal: bool) -> dict:
    """The kernel's slices of qkv: q its first groups flattened to heads, k and v the last two."""
    qkv = paddle.to_tensor(v["qkv"], stop_gradient=False)
    b, s, groups, kv_heads, d = v["qkv"].shape
    q = qkv[:, :, :groups - 2].reshape([b, s, (groups - 2) * kv_heads, d])
    return _grads(_attention(q, qkv[:, :, groups - 2], qkv[:, :, groups - 1], None, causal), {"qkv": qkv}, v["dout"])


def _varlen_packed(lengths: list[int], longest: int, groups: int, kv_heads: int, causal: bool) -> dict:
    """flash_attn_varlen_qkvpacked (varlen_padded: sequence s at row s longest) of qkv [len(lengths) longest,
    groups + 2, kv_heads, 8] and its grad op at a fed dout."""
    rows, heads = len(lengths) * longest, groups * kv_heads
    shape = [rows, groups + 2, kv_heads, 8]
    attrs = ATTRS | {"causal": causal, "scale": 0.3, "varlen_padded": True,
                     "max_seqlen_q": ("_set_int64_attr", longest), "max_seqlen_k": ("_set_int64_attr", longest)}
    state = {"softmax": ("softmax", [len(lengths), heads, 128, 128]),
             "softmax_lse": ("softmax_lse", [len(lengths), heads, 128]), "seed_offset": ("seed_offset", [2], "int64")}
    ins = {"qkv": ["qkv"], "cu_seqlens_q": ["cu_seqlens_q"], "cu_seqlens_k": ["cu_seqlens_k"]}
    grad_ins = {**ins, "out": ["out"], "softmax_lse": ["softmax_lse"], "seed_offset": ["seed_offset"],
                "out@GRAD": ["dout"]}
    ops = [("flash_attn_varlen_qkvpacked", ins, {"out": ("out", [rows, heads, 8]), **state}, attrs),
           ("flash_attn_varlen_qkvpacked_grad", grad_ins, {"qkv@GRAD": ("qkv@GRAD", shape)}, attrs)]
    feeds = {"qkv": (shape, F32), "dout": ([rows, heads, 8], F32), "cu_seqlens_q": ([len(lengths) + 1], I32),
             "cu_seqlens_k": ([len(lengths) + 1], I32)}
    return {"feeds": feeds, "ops": ops, "lengths": lengths,
            "reference": lambda v: _varlen_packed_reference(v, longest, causal, 0.3)}


def _varlen_packed_reference(v: dict, longest: int, causal: bool, scale: float) -> dict:
    """One sdpa call per sequence on the kernel's slices of its rows s longest .., zeros on the padding rows."""
    qkv = paddle.to_tensor(v["qkv"], stop_gradient=False)
    _, groups, kv_heads, d = v["qkv"].shape
    pieces, lengths = [], np.diff(v["cu_seqlens_q"])
    for s, n in enumerate(lengths):
        rows = qkv[s * longest:s * longest + n]
        q = rows[:, :groups - 2].reshape([n, (groups - 2) * kv_heads, d])
        pieces.append(_attention(q.unsqueeze(0), rows[:, groups - 2].unsqueeze(0), rows[:, groups - 1].unsqueeze(0),
                                 None, causal, scale)[0])
        pieces.append(paddle.zeros([longest - n, (groups - 2) * kv_heads, d]))
    return _grads(paddle.concat(pieces), {"qkv": qkv}, v["dout"])


def _mea(b: int, sq: int, sk: int, heads: int, bias: list[int], causal: bool, scale: float) -> dict:
    """memory_efficient_attention (dense form, bias, dropout_p 0) and its grad op at a fed dout."""
    shapes = {"query": [b, sq, heads, 8], "key": [b, sk, heads, 8], "value": [b, sk, heads, 8], "bias": bias}
    feeds = {name: (shape, F32) for name, shape in shapes.items()} | {"dout": ([b, sq, heads, 8], F32)}
    ins = {slot: [slot] for slot in shapes}
    attrs = {"max_seqlen_q": ("_set_int64_attr", sq), "max_seqlen_k": ("_set_int64_attr", sk), "causal": causal,
             "dropout_p": ("_set_float64_attr", 0.0), "scale": scale}
    state = {"logsumexp": ("logsumexp", [b, heads, 32]), "seed_and_offset": ("seed_and_offset", [2], "int64")}
    grad_ins = {**ins, "output": ["output"], "logsumexp": ["logsumexp"], "seed_and_offset": ["seed_and_offset"],
                "output@GRAD": ["dout"]}
    ops = [("memory_efficient_attention", ins, {"output": ("output", shapes["query"]), **state},
            attrs | {"is_test": False}),
           ("memory_efficient_attention_grad", grad_ins, {f"{s}@GRAD": (f"{s}@GRAD", shapes[s]) for s in shapes},
            attrs)]
    return {"feeds": feeds, "ops": ops, "reference": lambda v: _mea_reference(v, causal, scale)}


def _mea_reference(v: dict, causal: bool, scale: float) -> dict:
    """softmax(q k^T scale + bias, causal: -inf above the diagonal) v in Paddle's CPU ops, its logsumexp padded
    with inf to 32 rows as the kernel writes it, and the gradients (the bias's summed over its broadcast dims)."""
    t = {name: paddle.to_tensor(v[name], stop_gradient=False) for name in ("query", "key", "value", "bias")}
    q, k, value = (t[name].transpose([0, 2, 1, 3]) for name in ("query", "key", "value"))
    scale = 1 / np.sqrt(q.shape[-1]) if scale < 0 else scale
    scores = paddle.matmul(q, k, transpose_y=True) * scale + t["bias"]
    if causal:
        scores = scores + paddle.triu(paddle.full(scores.shape[-2:], -np.inf), 1)
    out = paddle.matmul(F.softmax(scores, -1), value).transpose([0, 2, 1, 3])
    lse = paddle.logsumexp(scores, axis=-1).numpy()
    padded = np.full((*lse.shape[:2], 32), np.inf, np.float32)
    padded[..., :lse.shape[2]] = lse
    grads = paddle.grad([out], list(t.values()), [paddle.to_tensor(v["dout"])])
    return {"output": out.numpy(), "logsumexp": padded} | {f"{n}@GRAD": g.numpy() for n, g in zip(t, grads)}


CASES = {
    "flash_attn_causal_gqa": _padded("flash_attn", 2, 5, 5, 4, 2, F32, True),
    "flash_attn_mask_f64": _padded("flash_attn", 2, 4, 6, 2, 1, F64, False, mask=[2, 1, 4, 6]),
    "flash_attn_unpadded_causal": _unpadded([3, 5, 2], 4, 2, F32, True),
    "flashmask_causal_lts_lte": _padded("flashmask_attention", 2, 6, 6, 2, 2, F32, True, bounds=2),
    "flashmask_bidirectional_f64": _padded("flashmask_attention", 1, 5, 5, 2, 1, F64, False, bounds=4),
    "flash_attn_qkvpacked_causal_gqa": _packed(2, 5, 2, 2, F32, True),
    "calc_reduced_attn_scores_causal_gqa": _reduced(2, 5, 4, 2),
    "flash_attn_varlen_qkvpacked_padded_causal_gqa": _varlen_packed([3, 5, 2], 6, 2, 2, True),
    "memory_efficient_attention_causal_bias": _mea(2, 5, 6, 2, [1, 2, 5, 6], True, -1.0),
    "memory_efficient_attention_scaled_batch_bias": _mea(2, 4, 3, 2, [2, 1, 4, 3], False, 0.3),
}


def _feed(rng, case: dict, name: str, shape: list[int], dtype: str):
    if name.startswith("cu_seqlens"):
        return np.cumsum([0, *case["lengths"]]).astype(np.int32)
    if name == "startend_row_indices":   # sorted row bounds per column, a start past each causal column's row
        bounds = np.sort(rng.integers(0, shape[2] + 1, shape), axis=-1)
        if shape[-1] == 2 and case["ops"][0][3]["causal"]:
            bounds[..., 0] = np.maximum(bounds[..., 0], np.arange(shape[2])[:, None].T + 1)
            bounds[..., 1] = np.maximum(bounds[..., 0], bounds[..., 1])
        return bounds.astype(np.int32)
    if name == "fixed_seed_offset":
        return np.array([7, 64], np.int64)
    return rng.standard_normal(shape).astype(dtype)


def write(case: str, seed: int) -> str:
    spec = CASES[case]
    program, fetches = translated.translated_program(spec)
    directory = translated.saved(program, case)
    rng = np.random.default_rng(seed)
    feed = {name: _feed(rng, spec, name, *spec["feeds"][name]) for name in spec["feeds"]}
    np.savez_compressed(directory / "feed.npz", **feed)
    with paddle.base.dygraph.guard(paddle.CPUPlace()):
        np.savez_compressed(directory / "expected.npz", **spec["reference"](feed))
    ops = sorted({op.name() for op in program.global_block().ops} - {"pd_op.fetch"})
    meta = {"case": case, "paddle_version": paddle.__version__, "fetches": fetches, "pir_ops": ops,
            "built_by": "legacy ops written into a ProgramDesc, translated by Paddle; expected.npz: Paddle's CPU "
                        "composition (sdpa math path)"}
    (directory / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return f"{ops}"


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    paddle.enable_static()
    for index, case in enumerate(CASES):   # the cases named on the command line, or all
        if sys.argv[1:] and case not in sys.argv[1:]:
            continue
        print(f"{case}: {write(case, 500 + index)}")
    sys.exit(0)
