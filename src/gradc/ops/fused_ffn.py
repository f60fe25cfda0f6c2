"""fused_feedforward (paddle.incubate.nn.FusedFeedForward, functional.fused_feedforward): Paddle 3.3.1 has a CUDA
kernel only; gradc follows its formula (paddle/phi/kernels/fusion/gpu/fused_feedforward_kernel.cu), over rows of
X's last dim d_model:

    h   = layer_norm(X; Ln1Scale, Ln1Bias, ln1_epsilon)   if pre_layer_norm, else X
    a   = dropout1(act(h Linear1Weight + Linear1Bias))     act: gelu (erf form) or relu
    s   = dropout2(a Linear2Weight + Linear2Bias) (+ X if add_residual)
    Out = s if pre_layer_norm, else layer_norm(s; Ln2Scale, Ln2Bias, ln2_epsilon)

Its dropouts run only where they draw nothing: at test (a factor 1 - rate with downgrade_in_infer, else 1) or at a
rate of exactly 0 or 1 (the kernel writes zeros for a rate of 1, at test too). In training the CUDA kernel draws
its masks from curand's Philox stream, which gradc's seeded dropout (Paddle's CPU mt19937_64) cannot reproduce, so
gradc refuses any other rate there. The intermediate outputs hold what the kernel writes: Linear1Out = h
Linear1Weight (no bias), Dropout1Out = a, Dropout2Out = s, Ln1Out = h, the masks ones (zeros for a rate of 1 in
training); each layer norm's Mean and Variance (not inverted) are flat [rows], float32 for float16 X. Only one of
the two layer norms runs: Paddle leaves the other's statistics unwritten, gradc writes zeros there (and Ln1Out = X
without the pre layer norm). Second derivatives: gradc.ops.fused_ffn_double.
"""

from __future__ import annotations

from ..ir import VarType, dtype_name
from ..makers import grad_op
from ..registry import defop
from ..shapes import dims_match, numel
from .infer import check_choice, check_float, one_dtype
from .interp import float32
from .nn import stats_dtype

IMPLEMENTATIONS = ("downgrade_in_infer", "upscale_in_train")
ACTIVATIONS = ("gelu", "relu")
FFN_ATTRS = {"pre_layer_norm": False, "ln1_epsilon": 1e-5, "ln2_epsilon": 1e-5, "act_method": "gelu",
             "dropout1_rate": 0.5, "dropout2_rate": 0.5, "dropout1_implementation": "downgrade_in_infer",
             "dropout2_implementation": "downgrade_in_infer", "is_test": False, "dropout1_fix_seed": False,
             "dropout2_fix_seed": False, "dropout1_seed": 0, "dropout2_seed": 0, "add_residual": True, "ring_id": -1}
# one layer norm runs, and Paddle's grad maker passes Dropout2Out after the post layer norm only: those may be absent
FFN_STATE = ("Dropout1Mask", "Dropout2Mask", "Ln1Mean?", "Ln1Variance?", "Ln2Mean?", "Ln2Variance?", "Linear1Out",
             "Ln1Out?", "Dropout1Out", "Dropout2Out?")
FFN_WEIGHTS = ("Linear1Weight", "Linear1Bias", "Linear2Weight", "Linear2Bias", "Ln1Scale", "Ln1Bias", "Ln2Scale",
               "Ln2Bias")


def drops_all(rate: float) -> bool:
    """The CUDA launchers' test for a rate of 1: the dropout then writes zeros (and zero masks), in both modes."""
    return abs(rate - 1) < 1e-5


def dropout_factor(attr, which: str) -> float:
    """What a dropout that draws nothing multiplies by: 0 at a rate of 1, else 1 - rate at test with
    downgrade_in_infer and 1 otherwise (the CUDA kernel's GetFactor, which subtracts in float32; in training only
    rates 0 and 1 run)."""
    rate = attr(f"{which}_rate")
    if drops_all(rate):
        return 0.0
    downgrade = attr(f"{which}_implementation") == "downgrade_in_infer"
    return float32(1 - float32(rate)) if attr("is_test") and downgrade else 1.0


def refuse_draws(ctx, rates: tuple[str, ...]) -> None:
    """Fails for a training-mode dropout that draws: its mask comes from Paddle's GPU Philox stream."""
    for rate in rates:
        if not ctx.attr("is_test") and ctx.attr(rate) > 0 and not drops_all(ctx.attr(rate)):
            ctx.fail(f"{rate}={ctx.attr(rate)} in training draws its mask from Paddle's GPU (curand Philox) random "
                     "stream, which gradc cannot reproduce: only is_test or a rate of 0 or 1 run")


def check_vector(ctx, slot: str, size: int, dtype) -> None:
    shape = ctx.shape(slot) if ctx.has(slot) else None
    if shape is not None and (len(shape) != 1 or not dims_match(shape[0], size)):
        ctx.fail(f"{slot} must be [{size}], got {shape}")
    if ctx.has(slot) and ctx.dtype(slot) not in (None, dtype):
        ctx.fail(f"{slot} must be of dtype {dtype_name(dtype)}, got {dtype_name(ctx.dtype(slot))}")


def _ffn_infer(ctx):
    check_float(ctx, "X")
    refuse_draws(ctx, ("dropout1_rate", "dropout2_rate"))
    for which in ("dropout1", "dropout2"):
        check_choice(ctx, f"{which}_implementation", IMPLEMENTATIONS)
    check_choice(ctx, "act_method", ACTIVATIONS)
    if not ctx.attr("pre_layer_norm") and not ctx.attr("add_residual"):
        ctx.fail("add_residual=False needs pre_layer_norm (the CUDA kernel has no post layer norm without it)")
    dtype = one_dtype(ctx, "X", "Linear1Weight", "Linear2Weight",
                      *(slot for slot in ("Linear1Bias", "Linear2Bias") if ctx.has(slot)))
    x, w1, w2 = ctx.shape("X"), ctx.shape("Linear1Weight"), ctx.shape("Linear2Weight")
    if x is None or w1 is None or w2 is None:
        return {}
    if len(x) < 2 or len(w1) != 2 or len(w2) != 2:
        ctx.fail(f"X must be [rows..., d_model] and the weights 2-D, got X {x}, Linear1Weight {w1}, "
                 f"Linear2Weight {w2}")
    d_model, hidden = x[-1], w1[1]
    if not dims_match(w1[0], d_model) or not (dims_match(w2[0], hidden) and dims_match(w2[1], d_model)):
        ctx.fail(f"Linear1Weight {w1} must be [{d_model}, dim_feedforward] and Linear2Weight {w2} "
                 f"[dim_feedforward, {d_model}]")
    check_vector(ctx, "Linear1Bias", hidden, dtype)
    check_vector(ctx, "Linear2Bias", d_model, dtype)
    for slot in ("Ln1Scale", "Ln1Bias", "Ln2Scale", "Ln2Bias"):
        check_vector(ctx, slot, d_model, stats_dtype(dtype))
    inner = [*x[:-1], hidden]
    stats = ([numel(x[:-1])], stats_dtype(dtype))
    norm = {"Ln1Mean": stats, "Ln1Variance": stats, "Ln1Out": (x, dtype), "Ln2Mean": stats, "Ln2Variance": stats}
    return {"Out": (x, dtype), "Dropout1Mask": (inner, VarType.UINT8), "Dropout2Mask": (x, VarType.UINT8),
            "Linear1Out": (inner, dtype), "Dropout1Out": (inner, dtype), "Dropout2Out": (x, dtype), **norm}


defop("fused_feedforward", ["X", "Dropout1Seed?", "Dropout2Seed?", "Linear1Weight", "Linear1Bias?", "Linear2Weight",
                            "Linear2Bias?", "Ln1Scale?", "Ln1Bias?", "Ln2Scale?", "Ln2Bias?"],
      ["Out", *FFN_STATE], attrs=FFN_ATTRS, infer=_ffn_infer, no_grad_inputs=["Dropout1Seed", "Dropout2Seed"],
      no_grad_outputs=FFN_STATE, grad=grad_op("X", *FFN_WEIGHTS, *FFN_STATE))
