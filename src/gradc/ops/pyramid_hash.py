"""pyramid_hash (paddle.incubate.layers.search_pyramid_hash, a legacy CPU op of Baidu's search models): each
sequence's n-grams of 2 .. pyramid_layer ids become one output row each, a hashed embedding: the n-gram's ids as
float32 bytes, hashed with XXH32 under seeds 0, rand_len, 2 rand_len, ..., pick num_emb / rand_len slices of
rand_len values of the flat table W ([space_len + rand_len, 1]); a sequence with no kept n-gram gives one row of
zeros. In training (is_training != 0) each n-gram is dropped when glibc's rand_r, seeded with ``seed`` at every
run, draws below drop_out_percent; in inference every n-gram is kept and the rows are scaled by drop_out_percent.
DropPos marks each n-gram kept (1) or not (0); X_Temp_Out is X as float32. With use_filter, a white list
(white_list_len > 0) keeps only the n-grams its bloom filter holds and a black list drops those its filter holds,
before any dropout draw (a filtered n-gram draws none): each list's float32 values are the bytes of Paddle's filter
(uint64 magic 17070416, m bits, k probes, count; then the bits), probed with MurmurHash3_x64_128 of the n-gram's
bytes under seeds 0 .. k - 1, both halves mod m.

No gradient: X holds int32 ids and the layer makes W stop_gradient; Paddle's append_backward writes no grad op for
it even with W trainable (its maker's one output, X@GRAD, is an int32 var's). Paddle's pyramid_hash_grad, which a
program may still hold, is no gradient either but an update step: it adds -lr times each kept n-gram's Out@GRAD row
to the W slices that row was copied from, in place, and writes nothing to X@GRAD. gradc's kernel does the same.
"""

from __future__ import annotations

from ..ir import VarType
from ..registry import NO_GRAD, defgrad, defop

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
    # DropPos: an int32 mark per n-gram, [n-grams, 1], whatever the program declares (Paddle's: float32 [])
    return {"Out": ([-1, emb], ctx.dtype("W")), "DropPos": (None, None), "X_Temp_Out": (x, VarType.FP32)}


defop("pyramid_hash", ["X", "W", "WhiteList", "BlackList"], ["Out", "DropPos", "X_Temp_Out"], attrs=ATTRS,
      infer=_infer, no_grad_inputs=["X", "W", "WhiteList", "BlackList"], grad=NO_GRAD,
      kernel_dtype_outputs=["DropPos", "X_Temp_Out"])


def _grad_infer(ctx):
    if ctx.dtype("W") not in (None, VarType.FP32, VarType.FP64):
        ctx.fail("pyramid_hash_grad updates a float32 or float64 W")
    return {"X@GRAD": (ctx.shape("X"), ctx.dtype("X"))}


# the update step of Paddle's kernel (W in place); X@GRAD, shaped like the int32 X as Paddle's infer shape needs it,
# is zeros (Paddle's kernel leaves it unwritten); Paddle's backward never writes the op, nor does gradc's
defgrad("pyramid_hash_grad", inputs=["X", "W", "DropPos", "X_Temp_Out", "Out@GRAD"], outputs=["X@GRAD"],
        attrs=ATTRS, infer=_grad_infer, grad=NO_GRAD, of="pyramid_hash")
