"""pyramid_hash (paddle.incubate.layers.search_pyramid_hash, a legacy CPU op of Baidu's search models): each
sequence's n-grams of 2 .. pyramid_layer ids become one output row each, a hashed embedding: the n-gram's ids as
float32 bytes, hashed with XXH32 under seeds 0, rand_len, 2 rand_len, ..., pick num_emb / rand_len slices of
rand_len values of the flat table W ([space_len + rand_len, 1]); a sequence with no kept n-gram gives one row of
zeros. In training (is_training != 0) each n-gram is dropped when glibc's rand_r, seeded with ``seed`` at every
run, draws below drop_out_percent; in inference every n-gram is kept and the rows are scaled by drop_out_percent.
DropPos marks each n-gram kept (1) or not (0); X_Temp_Out is X as float32. gradc has no bloom filter: use_filter
with a white or black list is refused.

No gradient: X holds int32 ids and the layer makes W stop_gradient. Paddle's pyramid_hash_grad is no gradient
either: it subtracts lr times Out@GRAD from W's hashed slices in place (an update step of its own) and writes
nothing to X@GRAD.
"""

from __future__ import annotations

from ..ir import VarType
from ..registry import NO_GRAD, defop

ATTRS = {"num_emb": 0, "space_len": 0, "pyramid_layer": 2, "rand_len": 0, "drop_out_percent": 0.0,
         "is_training": 0, "use_filter": True, "white_list_len": 0, "black_list_len": 0, "seed": 0, "lr": 0.0,
         "distribute_update_vars": ""}


def _infer(ctx):
    x, w = ctx.shape("X"), ctx.shape("W")
    emb, space, rand_len = ctx.attr("num_emb"), ctx.attr("space_len"), ctx.attr("rand_len")
    if ctx.dtype("X") not in (None, VarType.INT32):
        ctx.fail("pyramid_hash needs int32 ids X")
    if x is not None and (len(x) != 2 or x[1] not in (1, -1)):
        ctx.fail(f"pyramid_hash needs X [ids, 1], got {x}")
    if rand_len <= 0 or emb <= 0 or emb % rand_len:
        ctx.fail(f"pyramid_hash needs num_emb ({emb}) a positive multiple of rand_len ({rand_len})")
    if space <= 0 or (w is not None and w[0] >= 0 and w[0] < space + rand_len):
        ctx.fail(f"pyramid_hash needs W of at least space_len + rand_len = {space + rand_len} values, got {w}")
    if ctx.attr("pyramid_layer") < 2:
        ctx.fail(f"pyramid_hash needs pyramid_layer >= 2, got {ctx.attr('pyramid_layer')}")
    if ctx.attr("use_filter") and (ctx.attr("white_list_len") > 0 or ctx.attr("black_list_len") > 0):
        ctx.fail("pyramid_hash's bloom filters (use_filter with a white or black list) are not supported")
    # DropPos: an int32 mark per n-gram, [n-grams, 1], whatever the program declares (Paddle's: float32 [])
    return {"Out": ([-1, emb], ctx.dtype("W")), "DropPos": (None, None), "X_Temp_Out": (x, VarType.FP32)}


defop("pyramid_hash", ["X", "W", "WhiteList", "BlackList"], ["Out", "DropPos", "X_Temp_Out"], attrs=ATTRS,
      infer=_infer, no_grad_inputs=["X", "W", "WhiteList", "BlackList"], grad=NO_GRAD,
      kernel_dtype_outputs=["DropPos", "X_Temp_Out"])
