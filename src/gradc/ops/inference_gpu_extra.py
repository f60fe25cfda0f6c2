"""More fused ops of Paddle's GPU inference passes (Paddle 3.3.1's CPU build registers each but has no kernel for it):

- qkv_unpack_mha (decoder attention with q, k and v apart): q [B, 1, N, H] attends over k, v [B, S, N, H]:
  softmax(q k^T / sqrt(H)) v, the softmax's sum plus 1e-6 as the CUDA kernel divides by it; Out [B, 1, N, H].
  src_mask is a slot the kernel never reads; the kernel strides k and v by q's head count, so they hold N heads.
  Batch b reads q's row b, k's and v's rows b and writes out's row b: the kernel's store adds the batch offset under
  MMHA_USE_FP32_ACUM_FOR_OUT, which the mmha_util.cu.h it includes defines (line 107 of the header in Paddle 3.3.1's
  wheel); its other branch, compiled out, would write every batch into row 0.
- fused_token_prune (fused_token_prune_pass, for Transformer token pruning): each token's score is the sum over
  heads and query rows of Attn where Mask >= 0; the first token's score is the largest there is with
  keep_first_token; the L = NewMask.shape[2] tokens of highest score (ties to the lower index, the stable radix
  sort's order), in index order with keep_order: CLSInds [B, L] int64 their indices, SlimmedX [B, L, C] their rows.

- yolo_box_post (yolo_box_fuse_pass, after three yolo_box_head): per image, every cell and anchor of each head
  Boxes_i [N, A_i (5 + class_num), H, W] (the head's sigmoid / exp values) whose objectness reaches conf_thresh is a
  box: centre ((x + col) pic_w / H, (y + row) pic_h / H), size (w anchor_w pic_w / (ratio_i H), h anchor_h pic_h /
  (ratio_i H)) with pic = ImageShape / ImageScale, its corners clipped to [0, pic - 1], its class scores times the
  objectness; its class the best score's (-1 when none is above 0). Boxes sorted by class, then score descending,
  and, within a class, a box whose IoU with a kept one exceeds nms_threshold is suppressed: its objectness set to 0,
  but it stays in Out. Out rows [class, objectness, x1, y1, x2, y2] of every image's boxes ([1, 6] zeros when there
  are none), NmsRoisNum [N] int32 the boxes of each image. The CUDA kernel's quirks are kept: the IoU reads the
  corner (x1, y1) as a box's centre, and clip_bbox and scale_x_y are unread; its grid must be square (it reads an
  H x W head as H x H: gradc refuses another). Where it collects boxes in atomicAdd order and sorts them with qsort
  (unstable), gradc takes head, anchor, row, column order and a stable sort.

Paddle defines no grad for them: forward-only, a backward through one is refused naming the op.
"""

from __future__ import annotations

from ..ir import VarType
from ..registry import defop
from ..shapes import dims_match
from .infer import check_float, one_dtype


def _qkv_infer(ctx):
    check_float(ctx, "q")
    dtype, q = one_dtype(ctx, "q", "k", "v"), ctx.shape("q")
    if q is not None and (len(q) != 4 or not dims_match(q[1], 1)):
        ctx.fail(f"q must be [batch, 1, heads, head_dim] (one decoding step), got {q}")
    for slot in ("k", "v"):
        shape = ctx.shape(slot)
        if q is not None and shape is not None and (len(shape) != 4 or not all(
                dims_match(a, b) for a, b in zip((shape[0], shape[2], shape[3]), (q[0], q[2], q[3])))):
            ctx.fail(f"{slot} must be [batch, seq, heads, head_dim] with q {q}'s batch, heads and head_dim, "
                     f"got {shape}")
    return {"out": (q, dtype)}


defop("qkv_unpack_mha", ["q", "k", "v", "src_mask?"], ["out"], infer=_qkv_infer)


def _token_prune_infer(ctx):
    check_float(ctx, "X")
    dtype, attn, x, new_mask = one_dtype(ctx, "Attn", "X", "Mask"), ctx.shape("Attn"), ctx.shape("X"), \
        ctx.shape("NewMask")
    if attn is not None and (len(attn) != 4 or not dims_match(attn[2], attn[3])):
        ctx.fail(f"Attn must be [batch, heads, seq, seq], got {attn}")
    mask = ctx.shape("Mask")
    if attn is not None and mask is not None and (len(mask) != 4 or not all(map(dims_match, mask, attn))):
        ctx.fail(f"Mask must have Attn's shape {attn}, got {mask}")
    if x is not None and (len(x) != 3 or (attn is not None and not dims_match(x[1], attn[2]))):
        ctx.fail(f"X must be [batch, seq, channels] with Attn {attn}'s seq, got {x}")
    if new_mask is not None and (len(new_mask) != 4 or (attn is not None and not 0 <= new_mask[2] <= attn[2])):
        ctx.fail(f"NewMask must be [batch, heads, kept, kept] keeping at most Attn {attn}'s seq tokens, "
                 f"got {new_mask}")
    kept = new_mask[2] if new_mask is not None else -1
    batch, channels = (x[0], x[2]) if x is not None else (-1, -1)
    return {"SlimmedX": ([batch, kept, channels], dtype), "CLSInds": ([batch, kept], VarType.INT64)}


defop("fused_token_prune", ["Attn", "X", "Mask", "NewMask"], ["SlimmedX", "CLSInds"],
      attrs={"keep_first_token": True, "keep_order": False}, infer=_token_prune_infer)


def _yolo_post_infer(ctx):
    classes = ctx.attr("class_num")
    batch = None
    for i in range(3):
        anchors, shape = ctx.attr(f"anchors{i}"), ctx.shape(f"Boxes{i}")
        if len(anchors) % 2 or not anchors:
            ctx.fail(f"anchors{i} must hold (width, height) pairs, got {anchors}")
        channels = len(anchors) // 2 * (5 + classes)
        if shape is not None and (len(shape) != 4 or not dims_match(shape[1], channels)
                                  or not dims_match(shape[2], shape[3])):
            ctx.fail(f"Boxes{i} must be [N, {channels}, H, H] (anchors{i}'s {len(anchors) // 2} anchors of 5 + "
                     f"class_num {classes} channels, a square grid as the CUDA kernel reads it), got {shape}")
        batch = batch if shape is None else shape[0]
    for slot in ("ImageShape", "ImageScale"):
        shape = ctx.shape(slot)
        if shape is not None and (len(shape) != 2 or shape[1] != 2):
            ctx.fail(f"{slot} must be [N, 2] (height and width per image), got {shape}")
    return {"Out": ([-1, 6], VarType.FP32), "NmsRoisNum": ([batch if batch is not None else -1], VarType.INT32)}


defop("yolo_box_post", ["Boxes0", "Boxes1", "Boxes2", "ImageShape", "ImageScale"], ["Out", "NmsRoisNum"],
      attrs={"anchors0": [], "anchors1": [], "anchors2": [], "class_num": 1, "conf_thresh": 0.01,
             "downsample_ratio0": 32, "downsample_ratio1": 16, "downsample_ratio2": 8, "clip_bbox": True,
             "scale_x_y": 1.0, "nms_threshold": 0.45}, infer=_yolo_post_infer)
