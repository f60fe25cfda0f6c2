"""PIR programs of Paddle 3.3.1's FlashAttention-3 ops (gradc.ops.flash_attention_v3: flash_attn_v3,
flash_attn_v3_varlen, flashmask_attention_v2 and their grad ops), which its CPU build can neither build (no kernel:
its PIR API refuses the op, and its PIR backward refuses the grad op) nor translate (the grad ops have no legacy
proto): this tool writes each program's JSON itself with paddle_gpu_only_handwritten's Writer, with the op names,
operand / result / attribute names and order of Paddle's op definitions (pd_op.h), has Paddle load the file and
checks each op's names against them. The numbers come from Paddle too: its CPU run, in dygraph mode, of the same
attention composed of ops it has CPU kernels for (matmul, scale, tanh for softcap, the bottom-right window as triu /
tril of -inf, softmax, logsumexp; repeat_interleave for grouped heads; one call per varlen sequence; the dense mask
flashmask_attention's docstring builds from startend_row_indices), and the gradients at the fed out grad, into
expected.npz. Written as tests/data/paddle/pir_gpu_only/<case>/program.json, feed.npz, expected.npz and meta.json;
tests/test_flash_attention_v3.py runs them. Not part of the package: it needs paddlepaddle.

    /work/paddle-venv/bin/python tools/paddle_flash_attention_v3_programs.py
"""

from __future__ import annotations

import sys
import warnings

import numpy as np
import paddle
import paddle.nn.functional as F
import paddle_gpu_only_handwritten as handwritten

handwritten.TYPE_TAGS |= {"int32": "0.t_i32", "int64": "0.t_i64"}   # the cu_seqlens, bounds and max_seqlen values
WINDOW = [("window_size_left", -1), ("window_size_right", -1), ("softcap", 0.0)]


class Writer(handwritten.Writer):
    def full(self, name: str, value: int) -> None:
        """pd_op.full of an int64 [1] value (how a Scalar operand such as max_seqlen_q is written)."""
        attrs = [{"AT": {"#": "1.a_intarray", "D": [1]}, "N": "shape"}, {"AT": {"#": "0.a_f64", "D": float(value)},
                                                                       "N": "value"},
                 {"AT": {"#": "1.a_dtype", "D": "int64"}, "N": "dtype"},
                 {"AT": {"#": "1.a_place", "D": [1, 0, ""]}, "N": "place"}]
        self.ops.append({"#": "1.full", "A": attrs, "I": [], "O": [self._result(name, [1], "int64")],
                         "OA": handwritten._flags(1, persistable=False, stop_gradient=True)})


def _grad_results(shapes: dict, dtype: str) -> list:
    return [(f"{slot}@GRAD", shapes[slot], dtype) for slot in ("q", "k", "v")]


def _v3(b: int, sq: int, sk: int, heads: int, kv_heads: int, dtype: str, scale: float, causal: bool,
        window: tuple[int, int] = (-1, -1), softcap: float = 0.0) -> dict:
    shapes = {"q": [b, sq, heads, 8], "k": [b, sk, kv_heads, 8], "v": [b, sk, kv_heads, 8]}
    window_attrs = [("window_size_left", window[0]), ("window_size_right", window[1]), ("softcap", softcap)]
    state = [("out", shapes["q"], dtype), ("softmax_lse", [b, heads, sq], "float32")]
    ops = [("flash_attn_v3", ["q", "k", "v", None, None, None, None], state,
            [("softmax_scale", scale), ("is_causal", causal), *window_attrs, ("num_splits", 1),
             ("manual_set_pack_gqa", False), ("pack_gqa_", False), ("sm_margin", 0)]),
           ("flash_attn_v3_grad", ["q", "k", "v", "out", "softmax_lse", "dout"], _grad_results(shapes, dtype),
            [("softmax_scale", scale), ("is_causal", causal), *window_attrs, ("sm_margin", 0)])]
    return {"feeds": shapes | {"dout": shapes["q"]}, "dtype": dtype, "ops": ops,
            "reference": lambda v: _dense_reference(v, scale, causal, window, softcap)}


def _varlen(lengths: list[int], lengths_k: list[int], used_k: list[int], heads: int, kv_heads: int, dtype: str,
            scale: float, causal: bool) -> dict:
    """flash_attn_v3_varlen of sequences packed one after another, each reading only seqused_k of its keys."""
    total, longest = sum(lengths), max(*lengths, *lengths_k)
    shapes = {"q": [total, heads, 8], "k": [sum(lengths_k), kv_heads, 8], "v": [sum(lengths_k), kv_heads, 8]}
    ints = {"cu_seqlens_q": [len(lengths) + 1], "cu_seqlens_k": [len(lengths) + 1], "seqused_k": [len(lengths)]}
    state = [("out", shapes["q"], dtype), ("softmax_lse", [heads, total], "float32")]
    attrs = [("softmax_scale", scale), ("causal", causal), *WINDOW]
    ops = [("flash_attn_v3_varlen", ["q", "k", "v", "cu_seqlens_q", "cu_seqlens_k", None, "seqused_k", None, None,
                                     None, None, "max_seqlen_q", "max_seqlen_k"], state,
            [*attrs, ("num_splits", 1), ("manual_set_pack_gqa", False), ("pack_gqa", False), ("sm_margin", 0)]),
           ("flash_attn_v3_varlen_grad", ["q", "k", "v", "out", "softmax_lse", "cu_seqlens_q", "cu_seqlens_k", None,
                                          "seqused_k", "dout", "max_seqlen_q", "max_seqlen_k"],
            _grad_results(shapes, dtype), [*attrs, ("sm_margin", 0)])]
    return {"feeds": shapes | {"dout": shapes["q"]}, "ints": ints, "dtype": dtype, "ops": ops, "lengths": lengths,
            "lengths_k": lengths_k,
            "used_k": used_k, "fulls": {"max_seqlen_q": longest, "max_seqlen_k": longest},
            "reference": lambda v: _varlen_reference(v, scale, causal)}


def _flashmask(b: int, s: int, heads: int, kv_heads: int, dtype: str, scale: float, n: int) -> dict:
    """flashmask_attention_v2, causal, with n = 1 or 2 row bounds per column."""
    shapes = {"q": [b, s, heads, 8], "k": [b, s, kv_heads, 8], "v": [b, s, kv_heads, 8]}
    ints = {"startend_row_indices": [b, 1, s, n]}
    state = [("out", shapes["q"], dtype), ("softmax_lse", [b, heads, s], "float32")]
    attrs = [("softmax_scale", scale), ("is_causal", True)]
    ops = [("flashmask_attention_v2", ["q", "k", "v", "startend_row_indices", None], state, attrs),
           ("flashmask_attention_v2_grad", ["q", "k", "v", "out", "softmax_lse", "startend_row_indices", None,
                                            "dout"], _grad_results(shapes, dtype), attrs)]
    return {"feeds": shapes | {"dout": shapes["q"]}, "ints": ints, "dtype": dtype, "ops": ops,
            "reference": lambda v: _flashmask_reference(v, scale)}


def _attention(q, k, v, scale: float, causal: bool, window=(-1, -1), softcap: float = 0.0, mask=None) -> tuple:
    """Paddle's CPU composition of q [b, sq, h, d], k / v [b, sk, hk, d]: (out, logsumexp [b, h, sq])."""
    scale, softcap = float(np.float32(scale)), float(np.float32(softcap))   # a_f32 attributes: Paddle reads float32
    groups = q.shape[2] // k.shape[2]
    k, v = (paddle.repeat_interleave(x, groups, axis=2) if groups > 1 else x for x in (k, v))
    q, k, v = (x.transpose([0, 2, 1, 3]) for x in (q, k, v))
    scores = paddle.matmul(q, k, transpose_y=True) * scale
    if softcap > 0:
        scores = paddle.tanh(scores / softcap) * softcap
    sq, sk = scores.shape[-2:]
    left, right = window[0], 0 if causal else window[1]
    ninf = paddle.full([sq, sk], -np.inf, scores.dtype)
    if right >= 0:   # key j of row i kept when j - i <= sk - sq + right (bottom-right)
        scores = scores + paddle.triu(ninf, sk - sq + right + 1)
    if left >= 0:
        scores = scores + paddle.tril(ninf, sk - sq - left - 1)
    if mask is not None:
        scores = scores + mask
    out = paddle.matmul(F.softmax(scores, -1), v).transpose([0, 2, 1, 3])
    return out, paddle.logsumexp(scores, axis=-1)


def _grads(out, lse, inputs: dict, dout) -> dict:
    grads = paddle.grad([out], list(inputs.values()), [paddle.to_tensor(dout)])
    return {"out": out.numpy(), "softmax_lse": lse.numpy().astype(np.float32)} | {
        f"{name}@GRAD": g.numpy() for name, g in zip(inputs, grads)}


def _tensors(v: dict) -> dict:
    return {name: paddle.to_tensor(v[name], stop_gradient=False) for name in ("q", "k", "v")}


def _dense_reference(v: dict, scale: float, causal: bool, window, softcap: float) -> dict:
    t = _tensors(v)
    return _grads(*_attention(*t.values(), scale, causal, window, softcap), t, v["dout"])


def _varlen_reference(v: dict, scale: float, causal: bool) -> dict:
    """One call per sequence on its rows and its first seqused_k keys; softmax_lse [h, total] by packed row."""
    t, starts, starts_k = _tensors(v), v["cu_seqlens_q"], v["cu_seqlens_k"]
    outs, lses = [], []
    for s in range(len(starts) - 1):
        rows, keys = slice(starts[s], starts[s + 1]), slice(starts_k[s], starts_k[s] + v["seqused_k"][s])
        out, lse = _attention(t["q"][rows].unsqueeze(0), t["k"][keys].unsqueeze(0), t["v"][keys].unsqueeze(0), scale,
                              causal)
        outs.append(out[0])
        lses.append(lse[0])
    return _grads(paddle.concat(outs), paddle.concat(lses, axis=1), t, v["dout"])


def _flashmask_reference(v: dict, scale: float) -> dict:
    """Causal: column j masks rows [LTS, LTE) (or from LTS on, with one bound), the dense mask the docstring's
    flashmask_to_densemask builds, added to the causal scores."""
    bounds = v["startend_row_indices"]
    b, heads, cols, n = bounds.shape
    mask = np.zeros((b, heads, cols, cols), v["q"].dtype)
    for bi, hi, j in np.ndindex(b, heads, cols):
        mask[bi, hi, bounds[bi, hi, j, 0]:bounds[bi, hi, j, 1] if n == 2 else cols, j] = -np.inf
    t = _tensors(v)
    return _grads(*_attention(*t.values(), scale, True, mask=paddle.to_tensor(mask)), t, v["dout"])


CASES = {
    "flash_attn_v3_causal_gqa": _v3(2, 4, 6, 4, 2, "float32", 0.35, True),
    "flash_attn_v3_window_softcap_f64": _v3(1, 5, 5, 2, 1, "float64", 0.4, False, (2, 1), 1.5),
    "flash_attn_v3_varlen_causal_seqused": _varlen([3, 5, 2], [4, 6, 3], [4, 5, 2], 4, 2, "float32", 0.3, True),
    "flashmask_attention_v2_causal_f64": _flashmask(2, 6, 2, 2, "float64", 0.45, 2),
}


def _ints(rng, spec: dict, name: str, shape: list[int]) -> np.ndarray:
    if name.startswith("cu_seqlens"):
        return np.cumsum([0, *spec["lengths" if name.endswith("q") else "lengths_k"]]).astype(np.int32)
    if name == "seqused_k":
        return np.array(spec["used_k"], np.int32)
    bounds = np.sort(rng.integers(0, shape[2] + 1, shape), axis=-1)   # a start past each causal column's row
    bounds[..., 0] = np.maximum(bounds[..., 0], np.arange(shape[2]) + 1)
    bounds[..., 1] = np.maximum(bounds[..., 0], bounds[..., 1])
    return bounds.astype(np.int32)


def write(case: str, seed: int) -> str:
    spec = CASES[case]
    rng = np.random.default_rng(seed)
    feed = {name: rng.standard_normal(shape).astype(spec["dtype"]) for name, shape in spec["feeds"].items()}
    feed |= {name: _ints(rng, spec, name, shape) for name, shape in spec.get("ints", {}).items()}
    writer = Writer()
    for name, value in feed.items():
        writer.data(name, list(value.shape), str(value.dtype))
    for name, value in spec.get("fulls", {}).items():
        writer.full(name, value)
    for op in spec["ops"]:
        writer.op(*op)
    fetches = [result[0] for op in spec["ops"] for result in op[2]]
    for name in fetches:
        writer.fetch(name)
    pir_ops = sorted({f"pd_op.{op[0]}" for op in spec["ops"]})
    with paddle.base.dygraph.guard(paddle.CPUPlace()):
        expected = spec["reference"]({k: v.copy() for k, v in feed.items()})
    fulls = [("full", [], [None], [(name, 0) for name in ("shape", "value", "dtype", "place")])] * len(
        spec.get("fulls", {}))   # Paddle checks the pd_op.full ops' names too
    handwritten.save_case(handwritten.OUT / case, writer, fulls + spec["ops"], feed, expected, pir_ops,
                          "Paddle's CPU composition (matmul, tanh, triu / tril, softmax, logsumexp) and its grads")
    return " ".join(pir_ops)


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    paddle.set_device("cpu")
    for index, case in enumerate(CASES):
        print(f"{case}: {write(case, 700 + index)}")
    sys.exit(0)
