"""Kernels of gradc.ops.moe_permute: moe_permute, moe_unpermute (and gradc's moe_unpermute_grad), batched_gemm."""

from __future__ import annotations

import numpy as np

from ...ops.moe_permute import permuted_rows
from . import kernel


def _choices(routes: np.ndarray, experts: int) -> list[tuple[int, int, int]]:
    """(token, column, expert) of every routed choice, token by token; a token may list an expert once."""
    choices = []
    for token, row in enumerate(routes):
        chosen = [int(e) for e in row if e >= 0]
        if any(e >= experts for e in chosen) or len(set(chosen)) != len(chosen):
            raise ValueError(f"token {token} routes to {row.tolist()}: experts must be distinct and below "
                             f"num_experts {experts} (-1: none)")
        choices += [(token, column, int(e)) for column, e in enumerate(row) if e >= 0]
    return choices


@kernel("moe_permute")
def moe_permute(k):
    x, routes, probs = k.x("hidden_states"), k.x("expert_routemap_topk"), k.x("expert_prob_topk")
    experts, counts, align = k.attr("num_experts"), list(k.attr("tokens_per_expert")), k.attr("padding_alignment")
    choices = _choices(routes, experts)
    routed = np.bincount([e for _, _, e in choices], minlength=experts)
    if routed.tolist() != counts:
        raise ValueError(f"tokens_per_expert {counts} must count the routes per expert, which are {routed.tolist()}")
    padded = [(count + align - 1) // align * align for count in counts]
    offsets, rows = np.concatenate([[0], np.cumsum(padded)[:-1]]).astype(np.int64), permuted_rows(k.attr)
    if rows < sum(counts) or rows < offsets[-1] + counts[-1]:
        raise ValueError(f"override_buffer_size {rows} leaves no room for the {sum(counts)} routed rows")
    scale = k.optional("scale")
    out = {"hidden_states_unzipped": np.zeros((rows, x.shape[1]), x.dtype),
           "zipped_expertwise_rowmap": np.full((x.shape[0], experts), -1, np.int32),
           "token_prob_unzipped": np.zeros(rows, probs.dtype),
           "scale_unzipped": np.zeros((rows, 0 if scale is None else scale.shape[1]),
                                      np.float32 if scale is None else scale.dtype),
           "expert_indices": np.full(rows, -1, np.int32)}
    filled = offsets.copy()
    for token, column, expert in choices:
        row = filled[expert]
        filled[expert] += 1
        out["zipped_expertwise_rowmap"][token, expert] = row
        out["token_prob_unzipped"][row] = probs[token, column]
        out["expert_indices"][row] = expert
        if k.attr("do_gather"):   # without, the kernel leaves the rows unwritten; gradc's stay zeros
            out["hidden_states_unzipped"][row] = x[token]
            if scale is not None:
                out["scale_unzipped"][row] = scale[token]
    return out


def _rows_of(k) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rowmap, routes, the row of each choice or -1) of moe_unpermute, checked against the attributes."""
    rowmap, routes = k.x("zipped_expertwise_rowmap").astype(np.int64), k.x("expert_routemap_topk")
    tokens = k.attr("total_zipped_tokens_num")
    if tokens >= 0 and rowmap.shape[0] != tokens or routes.shape[0] != rowmap.shape[0]:
        raise ValueError(f"zipped_expertwise_rowmap {list(rowmap.shape)} and expert_routemap_topk "
                         f"{list(routes.shape)} must have total_zipped_tokens_num {tokens} rows")
    if rowmap.max(initial=-1) >= k.x("hidden_states_unzipped").shape[0]:
        raise ValueError(f"zipped_expertwise_rowmap names row {rowmap.max()}, past hidden_states_unzipped's "
                         f"{k.x('hidden_states_unzipped').shape[0]}")
    safe = np.where(routes >= 0, routes, 0).astype(np.int64)
    return rowmap, routes, np.where(routes >= 0, np.take_along_axis(rowmap, safe, 1), -1)


def _weights(k) -> np.ndarray:
    probs = k.x("token_prob_unzipped").reshape(-1).astype(np.float64)
    return probs if k.attr("using_weighted_combine") else np.ones_like(probs)


@kernel("moe_unpermute")
def moe_unpermute(k):
    rows, probs = k.x("hidden_states_unzipped"), k.x("token_prob_unzipped").reshape(-1)
    rowmap, _, choice_rows = _rows_of(k)
    weights, out = _weights(k), np.zeros((rowmap.shape[0], rows.shape[1]))
    for token, row in zip(*np.nonzero(rowmap >= 0)):
        out[token] += weights[rowmap[token, row]] * rows[rowmap[token, row]]
    topk = np.where(choice_rows >= 0, probs[np.maximum(choice_rows, 0)], 0)
    return {"hidden_states": out.astype(rows.dtype), "expert_prob_topk": topk.astype(probs.dtype)}


@kernel("moe_unpermute_grad")
def moe_unpermute_grad(k):
    rows, probs = k.x("hidden_states_unzipped"), k.x("token_prob_unzipped")
    dy = k.x("hidden_states@GRAD").astype(np.float64)
    rowmap, _, choice_rows = _rows_of(k)
    tokens, experts = np.nonzero(rowmap >= 0)
    kept = rowmap[tokens, experts]

    def drows():
        grad = np.zeros(rows.shape)
        grad[kept] = _weights(k)[kept, None] * dy[tokens]
        return grad.astype(rows.dtype)

    def dprobs():
        grad = np.zeros(probs.size)
        dtopk = k.optional("expert_prob_topk@GRAD")
        if dtopk is not None:
            grad[choice_rows[choice_rows >= 0]] += dtopk[choice_rows >= 0]
        if k.attr("using_weighted_combine"):
            grad[kept] += np.einsum("rd,rd->r", rows[kept].astype(np.float64), dy[tokens])
        return grad.reshape(probs.shape).astype(probs.dtype)

    return k.grads({"hidden_states_unzipped@GRAD": drows, "token_prob_unzipped@GRAD": dprobs})


def _groups(sizes, rows: int) -> list[slice]:
    if sum(sizes) != rows:
        raise ValueError(f"batch_sizes {list(sizes)} must add up to lhs's {rows} rows")
    ends = np.cumsum(sizes)
    return [slice(end - size, end) for size, end in zip(sizes, ends)]


@kernel("batched_gemm")
def batched_gemm(k):
    lhs, rhs = k.x("lhs"), k.x("rhs")
    groups = _groups(k.attr("batch_sizes"), lhs.shape[0])
    a, b = lhs.astype(np.float64), rhs.astype(np.float64)
    if k.attr("trans_lhs"):
        return {"output": np.stack([a[rows].T @ b[rows] for rows in groups]).astype(lhs.dtype)}
    weights = b.transpose(0, 2, 1) if k.attr("trans_rhs") else b
    out = np.zeros((lhs.shape[0], weights.shape[2]))
    for i, rows in enumerate(groups):
        out[rows] = a[rows] @ weights[i]
    return {"output": out.astype(lhs.dtype)}
