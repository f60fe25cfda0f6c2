"""Whole zoo detectors trained as their configs train them, built with Paddle's layers and run by Paddle 3.3.1 for six
steps (tools/zoo_train_scheduled.py), from tests/seeded_params.py's values for every parameter Paddle's startup draws:
- tests/data/paddle/scheduled/db_mv3: PaddleOCR's DB from the image (det_mv3_db.yml: MobileNetV3 large x0.5 with
  hardswish and squeeze-excitation, DBFPN 256 wide, DBHead, DBLoss), Adam under LinearWarmup over a
  CosineAnnealingDecay (PaddleOCR's Cosine with warmup_epoch), L2Decay and ClipGradByNorm; float32;
- tests/data/paddle/scheduled/ppyoloe_s, ppyoloe_s_f64: PP-YOLOE "s" from the image (CSPResNet, CustomCSPPAN with SPP,
  the head, TaskAlignedAssigner and its losses), Momentum with PaddleDetection's warm-up and cosine as a
  PiecewiseDecay, L2Decay with the batch norms' own L2Decay(0.0) and ClipGradByGlobalNorm; float32 and float64;
- tests/data/paddle/scheduled/ppliteseg_stdc1_f64: PaddleSeg's PP-LiteSeg with STDC1 (CatBottlenecks, the context
  module, UAFM spatial attention, three seg heads) and OhemCrossEntropyLoss on each, Momentum under LinearWarmup over
  PolynomialDecay with weight decay; float64;
- tests/data/paddle/scheduled/ppocrv4_rec, ppocrv4_rec_f64: PaddleOCR's PP-OCRv4 recognizer (PPLCNetV3's
  re-parameterizable branches and learnable affine blocks at a tenth of the rate, MultiHead: the SVTR neck and CTC
  head over the detached backbone, the NRTR decoder with teacher forcing; CTCLoss (warpctc) + NRTRLoss), Adam under
  PaddleOCR's Cosine with warm-up, L2Decay with the CTC fc's own, ClipGradByValue; float32 and float64;
- tests/data/paddle/scheduled/picodet_s, picodet_s_f64: PaddleDetection's PP-PicoDet s from the image (LCNet x0.75,
  LCPAN with its fourth level, PicoHeadV2 with the align head, TaskAlignedAssigner, VarifocalLoss, GIoULoss and
  DistributionFocalLoss on the positives nonzero picks), Momentum with the warm-up and cosine as a PiecewiseDecay,
  L2Decay 4e-5 with the batch norms' own L2Decay(0.0); float32 and float64;
- tests/data/paddle/scheduled/ppocrv4_det, ppocrv4_det_f64: PaddleOCR's PP-OCRv4 mobile detector (PPLCNetV3 x0.75 in
  its det form, RSEFPN 96 wide, DBHead with fix_nan's isnan + where, DBLoss), Adam under PaddleOCR's Cosine with
  warm-up, L2Decay with the batch norms' own and the affine blocks at a tenth of the rate; float32 and float64;
- tests/data/paddle/scheduled/pphumanseg_v2_lite_f64: PaddleSeg's PP-HumanSeg v2 Lite (MobileSeg
  over MobileNetV3 large x1.0, the mobile context module, UAFMMobile fusions, the last fuse, three seg heads;
  MixedLoss of cross entropy and Lovasz softmax (argsort, cumsum, nonzero + gather) on each), Momentum under
  PolynomialDecay with weight decay and the backbone's batch norms' own L2Decay(0.0); float64 (its float32 gradients
  are ill-conditioned: Lovasz's order of the sorted errors moves with the rounding, docs/real-models.md);
- tests/data/paddle/scheduled/tinypose_f64: PaddleDetection's PP-TinyPose (LiteHRNet wider_naive: the shuffle stem,
  NAIVE modules of ShuffleUnits over four branches with their fuse layers, the IterativeHead; TopDownHRNet's final
  conv and KeyPointMSELoss with target weights), Adam under the warm-up and PiecewiseDecay as one PiecewiseDecay;
  float64.
Float32 rounding decides the later steps (Paddle's own float32 run leaves its float64 one as far), so those cases check
three, against the float64 run where there is one (FLOAT64_REFERENCE); db_mv3_f64 (Paddle's legacy clip_by_norm takes
no float64: without clipping) checks all six to 1e-12.
A static LRScheduler lives outside the program: Paddle's executor writes its value into the learning-rate var before
each run, as gradc.schedules.run_step does. gradc runs Paddle's training program, and its own compile of the training
forward with the same optimizer, through the steps; db_mv3/pir, picodet_s/pir and ppocrv4_det/pir: the same model
built by Paddle in PIR mode (its forward.json; Paddle's PIR numbers), which PIR's executor also feeds the scheduler's
rate; tinypose_f64/pir and pphumanseg_v2_lite_f64/pir: in PIR mode in float64."""

import gzip
import json

import numpy as np
import pytest

import gradc
from fixtures import DATA
from gradc import optimizers, schedules
from gradc.io import parse_program
from gradc.ir.types import NUMPY_DTYPE_NAMES
from gradc.pir import load_pir
from seeded_params import param_value, stored_grad

SCHEDULED = DATA / "scheduled"
CASES = {   # the ops that set each apart; steps run; tolerances of the losses and of the first step's gradients
    # against Paddle's (None: judged against FLOAT64_REFERENCE's); measured: db_mv3 1.5e-6 and 1.6e-5, db_mv3_f64
    # 1.8e-14 and 2.3e-14
    "db_mv3": ({"hard_swish", "hard_sigmoid", "depthwise_conv2d", "conv2d_transpose", "argsort", "clip_by_norm",
                "adam"}, 3, 1e-5, 1e-4),
    "db_mv3_f64": ({"hard_swish", "hard_sigmoid", "depthwise_conv2d", "conv2d_transpose", "argsort", "adam"}, 6,
                   1e-12, 1e-12),
    "ppyoloe_s": ({"pool2d", "nearest_interp_v2", "top_k_v2", "masked_select", "squared_l2_norm", "momentum",
                   "swish"}, 3, None, None),
    # PP-YOLOE s in float64, gradc's compile: measured losses to 2.1e-11 over six steps, gradients 1.4e-12
    "ppyoloe_s_f64": ({"pool2d", "nearest_interp_v2", "top_k_v2", "masked_select", "momentum", "swish"}, 3, 1e-10,
                      1e-10),
    # Paddle's float64 average-pool gradient scales by a float32 1 / pool_size (2.4e-8 off for 1/6, 1/9), which
    # reaches every backbone gradient (3.2e-8) and the later losses; gradc's agrees with central differences
    "ppliteseg_stdc1_f64": ({"pool2d", "bilinear_interp_v2", "argsort", "one_hot_v2", "softmax_with_cross_entropy",
                             "reduce_max", "momentum"}, 3, 1e-7, 1e-7),
    # PP-PicoDet s: from the third step the rate of 0.32 grows rounding (the third float32 loss is 1.6e-3 from
    # Paddle's float64 one in Paddle); picodet_s_f64 holds the steps to 1e-8
    "picodet_s": ({"hard_swish", "hard_sigmoid", "depthwise_conv2d", "nearest_interp_v2", "where_index", "linspace",
                   "bce_loss", "top_k_v2", "momentum"}, 3, None, None),
    # Paddle's float64 adaptive average pool scales by float32(1 / 9) (the 3 x 3 squeeze-excitations): measured 3.5e-9
    # on the first gradients; the losses of the first four steps 6.9e-9, the later ones past 1e-5 (lr 0.32 amplifies)
    "picodet_s_f64": ({"hard_swish", "where_index", "gather", "softmax_with_cross_entropy", "bce_loss", "momentum"},
                      4, 1e-8, 1e-8),
    # PP-OCRv4 mobile det (the first step's rate is 0: its loss is the second's); its learnable affine scalars are
    # sums over a whole activation that cancel: Paddle's own float32 gradients of them leave its float64 ones by
    # 2.2e-3 (affine_0.w_0)
    "ppocrv4_det": ({"hard_swish", "hard_sigmoid", "depthwise_conv2d", "isnan_v2", "where", "conv2d_transpose",
                     "argsort", "adam"}, 3, None, None),
    "ppocrv4_det_f64": ({"hard_swish", "isnan_v2", "where", "nearest_interp_v2", "adam"}, 3, 1e-10, 1e-10),
    # PP-OCRv4 rec (ClipGradByValue): its learnable affine scalars before batch norms have gradients zero but for
    # rounding, which Adam moves by the rate whatever their size
    "ppocrv4_rec": ({"hard_swish", "hard_sigmoid", "depthwise_conv2d", "warpctc", "lookup_table_v2", "masked_select",
                     "clip", "adam"}, 3, None, None),
    # Paddle's float64 adaptive average pool (the squeeze-excitations') scales its gradient by float32(1 / 80):
    # measured 1.7e-8
    "ppocrv4_rec_f64": ({"warpctc", "layer_norm", "swish", "one_hot_v2", "log_softmax", "clip", "adam"}, 3, 1e-10,
                        5e-8),
    # PP-TinyPose (LiteHRNet wider_naive, 5,207 ops in training), gradc's compile in float64: measured losses to
    # 5.6e-13 over three steps, gradients within 6.8e-13 of each one's largest (float32 in the tool: 3.4e-7, 5.6e-6,
    # 3.5e-4 and 4.1e-4, as Paddle's own float32 leaves its float64: 4.3e-7, 2.1e-5, 3.8e-3; one case, for time)
    "tinypose_f64": ({"transpose2", "nearest_interp_v2", "bilinear_interp_v2", "split", "square", "adam"}, 3, 1e-11,
                     1e-11),
    # Paddle's float64 adaptive average pools (the squeeze-excitations' over 18 x 32, 9 x 16, 5 x 8 and the context
    # module's) scale their gradients by float32(1 / n): measured 2.1e-8 of a gradient's largest, losses 4.5e-10;
    # its bilinear resizes' grad kernels sample at float32 positions, where gradc's float64 gradient is the forward's
    # exact adjoint (central differences agree with gradc's): 5e-8 to 1e-7 of the model's largest gradient (a small one,
    # a batch norm's weight at 2e-6, is off by that absolute amount), losses 4.3e-9
    "pphumanseg_v2_lite_f64": ({"argsort", "cumsum", "gather", "bilinear_interp_v2", "pool2d", "momentum"}, 3, 1e-8,
                               2e-7),
}
# Float32 rounding differs between CPUs' BLAS kernels (these cases' fixed tolerances, measured on one CPU, failed on
# one with AVX-512 by up to 6x): a float32 case is judged against Paddle's float64 run of the same batch and seeded
# parameters, gradc's float32 as close to it as Paddle's own float32 within FLOAT32_SPREAD (measured on AVX2 and
# AVX-512 CPUs: at most 5.3x on a loss, PicoDet's second, and 3.9x on a gradient, PP-YOLOE's stem batch norm's)
FLOAT64_REFERENCE = {"ppyoloe_s": "ppyoloe_s_f64", "picodet_s": "picodet_s_f64", "ppocrv4_rec": "ppocrv4_rec_f64",
                     "ppocrv4_det": "ppocrv4_det_f64"}
FLOAT32_SPREAD = 10
# judged within tolerance of the model's largest gradient, not each one's own: Paddle's error there is absolute
MODEL_SCALED = {"pphumanseg_v2_lite_f64"}


def _program(case, name):
    return parse_program(gzip.decompress((case / f"{name}.pb.gz").read_bytes()))


def _schedule(spec: dict) -> schedules.Schedule:
    arguments = {k: _schedule(v) if isinstance(v, dict) else v for k, v in spec.items() if k != "name"}
    return schedules.make(spec["name"], **arguments)


def _optimizer(settings: dict) -> optimizers.Optimizer:
    """The config's optimizer by Paddle's names, as the tool gave them to Paddle."""
    arguments = {k: v for k, v in settings.items() if k not in ("type", "schedule", "weight_decay", "clip")}
    decay, clip = settings["weight_decay"], settings["clip"]
    return getattr(optimizers, settings["type"])(
        learning_rate=_schedule(settings["schedule"]), weight_decay=getattr(optimizers, decay["name"])(decay["coeff"]),
        grad_clip=clip and getattr(optimizers, clip["name"])(**{k: v for k, v in clip.items() if k != "name"}),
        **arguments)


def _param_attrs(meta: dict) -> dict:
    """The batch norms' L2Decay(0.0); the others' own rate multiplier (PP-OCRv4's affine blocks: 0.1) and L2
    coefficient (its CTC fc: 1e-5)."""
    attrs = {p: optimizers.ParamAttr(regularizer=optimizers.L2Decay(0.0)) for p in meta["no_decay"]}
    for name, own in meta.get("param_attrs", {}).items():
        decay = own["decay"] and optimizers.L2Decay(own["decay"])
        attrs[name] = optimizers.ParamAttr(learning_rate=own["learning_rate"], regularizer=decay)
    return attrs


def _scope(case, meta, program, startup=None, start=None):
    """Paddle's startup run by gradc (its constants) but for the draws of the seeded parameters (its gaussian_random
    and uniform_random ops, which write those alone: a third of the file's time, all replaced), the seeded values,
    then gradc's optimizer startup where given. tests/test_paddle_random.py checks those draws against Paddle's.
    ``start``: the values an earlier call gave the same program's twin, copied instead of made again."""
    scope, executor, seeded = gradc.Scope(), gradc.Executor(), set(meta["seeded"])
    if start is not None:
        for name, value in start.items():
            scope[name] = value.copy()
    else:
        paddles = _program(case, "startup")
        paddles.global_block.ops = [op for op in paddles.global_block.ops if not set(op.output_names()) <= seeded]
        paddles.mark_changed()
        executor.run(paddles, {}, [], scope)
        for name in meta["seeded"]:
            var = program.global_block.var(name)
            scope[name] = param_value(name, list(var.shape), meta["seed"]).astype(NUMPY_DTYPE_NAMES[var.dtype])
    if startup is not None:
        executor.run(startup, {}, [], scope)
    return scope


def _assert_grads_match(grads, values, paddle, tolerance, reference=None, model_scaled=False):
    """Against Paddle's gradients of the same precision within tolerance of each one's largest (of the model's
    largest where ``model_scaled``) or, for a float32 case with a reference, against Paddle's float64 ones within
    FLOAT32_SPREAD times Paddle's own float32 distance."""
    theirs = {g: paddle[f"@grad:{g}"] for g in grads}
    largest = max(np.abs(v).max() for v in theirs.values())
    truth = theirs if reference is None else {g: reference[f"@grad:{g}"] for g in grads}
    # a bias a batch norm cancels has a gradient zero but for rounding: against 100 ulps of the largest
    floor = 100 * np.finfo(values[0].dtype).eps * max(np.abs(v).max() for v in truth.values())
    for grad, value in zip(grads, values):
        distance = np.abs(stored_grad(grad, value) - truth[grad]).max()
        if reference is None:
            scale = largest if model_scaled else np.abs(theirs[grad]).max()
            assert distance <= tolerance * scale + floor, (grad, distance)
        else:
            paddles = np.abs(theirs[grad].astype(np.float64) - truth[grad]).max()
            assert distance <= FLOAT32_SPREAD * (paddles + floor), (grad, distance, paddles)


def _assert_loss_matches(loss, paddle, step, tolerance, reference=None):
    """As _assert_grads_match, for a step's loss (its floor: 16 float32 ulps)."""
    theirs = paddle[f"@loss:{step}"]
    if reference is None:
        np.testing.assert_allclose(loss, theirs, rtol=tolerance[step] if isinstance(tolerance, tuple) else tolerance)
        return
    truth = float(reference[f"@loss:{step}"])
    bound = FLOAT32_SPREAD * (abs(float(theirs) - truth) + 16 * np.finfo(np.float32).eps * abs(truth))
    assert abs(float(loss) - truth) <= bound, (step, float(loss), truth, float(theirs))


def _reference(name):
    return np.load(SCHEDULED / FLOAT64_REFERENCE[name] / "paddle.npz") if name in FLOAT64_REFERENCE else None


def _trained(name: str, compile_forward: bool):
    case = SCHEDULED / name
    meta = json.loads((case / "meta.json").read_text())
    if compile_forward:
        program = _program(case, "forward")
        startup = _optimizer(meta["optimizer"]).minimize(program, meta["loss"], param_attrs=_param_attrs(meta))
    else:
        program, startup = _program(case, "train"), None
    return case, meta, program, _scope(case, meta, program, startup)


@pytest.mark.parametrize(("name", "compile_forward"), [   # the tool finds both alike for every model: one each here
    ("db_mv3", True), ("db_mv3_f64", False), ("ppyoloe_s", True), ("ppyoloe_s_f64", False),
    ("ppliteseg_stdc1_f64", True), ("ppocrv4_rec", False), ("ppocrv4_rec_f64", True), ("picodet_s", False),
    ("picodet_s_f64", True), ("ppocrv4_det", True), ("ppocrv4_det_f64", False), ("pphumanseg_v2_lite_f64", True),
    ("tinypose_f64", True)])
def test_training_follows_paddles_schedule_decay_and_clipping(name, compile_forward):
    ops, steps, loss_tolerance, grad_tolerance = CASES[name]
    case, meta, program, scope = _trained(name, compile_forward)
    assert ops <= {op.type for op in program.global_block.ops}
    paddle, feed = np.load(case / "paddle.npz"), dict(np.load(case / "feed.npz"))
    schedule, executor = _schedule(meta["optimizer"]["schedule"]), gradc.Executor()
    lr_var = schedules.learning_rate_var(program)
    grads = sorted(n.removeprefix("@grad:") for n in paddle.files if n.startswith("@grad:"))
    assert len(grads) == sum(op.type == meta["optimizer"]["type"].lower() for op in program.global_block.ops)
    rates = [paddle[f"@lr:{step}"] for step in range(steps)]
    assert len({float(rate) for rate in rates}) > 2   # warm-up and decay: the rate changes from step to step
    reference = _reference(name)
    for step in range(steps):
        loss, *values = schedules.run_step(executor, program, scope, schedule, step, feed,
                                           [meta["loss"], *(grads if step == 0 else [])])
        np.testing.assert_array_equal(scope[lr_var].reshape(rates[step].shape), rates[step])
        _assert_loss_matches(loss, paddle, step, loss_tolerance, reference)
        if step == 0:   # the legacy program clips the gradient vars in place: Paddle fetched them clipped
            _assert_grads_match(grads, values, paddle, grad_tolerance, reference, name in MODEL_SCALED)


@pytest.mark.parametrize(("name", "ops", "steps"), [   # PP-OCRv4 det: its gradients and one step, for time (its
    # legacy case trains three; the tool measures the six PIR steps)
    ("db_mv3", {"pd_op.hardswish", "pd_op.argsort", "pd_op.conv2d_transpose"}, 3),
    ("picodet_s", {"pd_op.hardswish", "pd_op.nonzero", "pd_op.linspace", "pd_op.bce_loss", "pd_op.topk"}, 3),
    ("ppocrv4_det", {"pd_op.hardswish", "pd_op.isnan", "pd_op.where", "pd_op.conv2d_transpose", "pd_op.argsort"}, 1),
    ("tinypose_f64", {"pd_op.depthwise_conv2d", "pd_op.nearest_interp", "pd_op.bilinear_interp", "builtin.split"}, 1),
    ("pphumanseg_v2_lite_f64", {"pd_op.argsort", "pd_op.cumsum", "pd_op.gather", "pd_op.pool2d"}, 1)])
def test_pir_forward_compiles_to_paddles_pir_training(name, ops, steps):
    """Paddle's PIR executor feeds the rate as its legacy one does; its gradients are fetched before clipping, so
    gradc's backward alone gives them."""
    legacy = SCHEDULED / name
    case, (_, _, loss_tolerance, grad_tolerance) = legacy / "pir", CASES[name]
    meta, paddle = json.loads((case / "meta.json").read_text()), np.load(case / "paddle.npz")
    feed = dict(np.load(legacy / "feed.npz"))
    forward, backward = (load_pir(gzip.decompress((case / "forward.json.gz").read_bytes())) for _ in range(2))
    assert ops <= set(meta["ops"])
    grads = [grad for _, grad in gradc.append_backward(backward, meta["loss"])]
    assert sorted(grads) == sorted(n.removeprefix("@grad:") for n in paddle.files if n.startswith("@grad:"))
    reference, scope = _reference(name), _scope(legacy, meta, backward)
    start = {var: scope[var].copy() for var in scope}   # the forward's twin starts from the same values
    _assert_grads_match(grads, gradc.Executor().run(backward, feed, grads, scope), paddle, grad_tolerance, reference,
                        name in MODEL_SCALED)
    startup = _optimizer(meta["optimizer"]).minimize(forward, meta["loss"], param_attrs=_param_attrs(meta))
    scope, schedule = _scope(legacy, meta, forward, startup, start), _schedule(meta["optimizer"]["schedule"])
    for step in range(steps):
        (loss,) = schedules.run_step(gradc.Executor(), forward, scope, schedule, step, feed, [meta["loss"]])
        assert float(np.float32(schedule(step))) == paddle[f"@lr:{step}"]
        _assert_loss_matches(loss, paddle, step, loss_tolerance, reference)
