"""Programs holding the fused ops of Paddle Inference's GPU passes and BuildStrategy's elementwise-activation fusion,
written and translated to PIR by Paddle 3.3.1 (tools/paddle_gpu_inference_ops.py): gradc runs each, legacy and PIR,
to Paddle's CPU kernel's numbers or, for the GPU-only ops, to Paddle's CPU run of the unfused layers."""

import json

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA

ROOT = DATA / "gpu_inference"
CASES = sorted(p.name for p in ROOT.iterdir() if p.is_dir())
OPS = {"fused_elemwise_activation", "fused_elemwise_activation_grad", "fused_elemwise_add_activation",
       "fused_elemwise_add_activation_grad", "fusion_squared_mat_sub", "fusion_seqpool_concat", "self_dp_attention",
       "multihead_matmul", "skip_layernorm", "fused_embedding_eltwise_layernorm", "fused_fc_elementwise_layernorm",
       "fused_conv2d_add_act", "fusion_transpose_flatten_concat", "fused_embedding_fc_lstm",
       "attention_lstm", "multi_gru", "yolo_box_head", "qkv_unpack_mha", "fused_token_prune",
       "fused_scale_bias_relu_conv_bn", "fused_scale_bias_add_relu", "resnet_unit", "resnet_unit_grad",
       "fused_dconv_drelu_dbn", "resnet_basic_block", "resnet_basic_block_grad",
       "yolo_box_post", "squeeze_excitation_block"}


def _meta(case: str) -> dict:
    return json.loads((ROOT / case / "meta.json").read_text())


def _run(case: str, program_file: str, fetches: list[str]) -> dict:
    with np.load(ROOT / case / "feed.npz") as saved:
        feed = {n: saved[n] for n in saved.files if not n.endswith(".lod")}
        feed.update({n: gradc.LoDTensor(feed[n], [saved[f"{n}.lod"]]) for n in feed if f"{n}.lod" in saved.files})
    outs = gradc.Executor().run(gradc.load(ROOT / case / program_file), feed, fetches)
    return dict(zip(fetches, outs))


def test_the_fixtures_hold_every_op():
    assert OPS == set().union(*(_meta(case)["legacy_ops"] for case in CASES))


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("program_file", ["program.pdmodel", "program.json"])
def test_runs_to_paddles_numbers(case, program_file):
    meta = _meta(case)
    fetches = meta["fetches"] if program_file.endswith("pdmodel") else meta["pir_fetches"]
    got = _run(case, program_file, fetches)
    with np.load(ROOT / case / "expected.npz") as expected:
        for name in fetches:
            assert got[name].dtype == expected[name].dtype and got[name].shape == expected[name].shape, name
            np.testing.assert_allclose(got[name], expected[name], rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("case", CASES)
def test_loads_verifies_and_saves_byte_for_byte(case, tmp_path):
    program = gradc.load(ROOT / case / "program.pdmodel")
    assert gradc.verify(program) == []
    gradc.save(program, tmp_path / "again.pdmodel")
    assert (tmp_path / "again.pdmodel").read_bytes() == (ROOT / case / "program.pdmodel").read_bytes()


PASSES = DATA / "gpu_inference_passes"
MISWIRED = PASSES / "add_relu_of_y_backward"   # the pass miswires this one's grad op: the test below pins it
PASS_CASES = sorted(p.name for p in PASSES.iterdir() if p.is_dir() and p != MISWIRED)


@pytest.mark.parametrize("case", PASS_CASES)
def test_a_program_paddles_passes_fused_runs_to_the_unfused_layers_numbers(case):
    """Paddle's own fuse passes over Paddle's layers (tools/paddle_gpu_inference_passes.py); the expected numbers are
    Paddle's CPU run of the program before the passes."""
    meta = json.loads((PASSES / case / "meta.json").read_text())
    program, scope = gradc.load(PASSES / case / "model.pdmodel"), gradc.Scope()
    assert gradc.verify(program) == []
    assert set(meta["ops_after"]) - set(meta["ops_before"]) <= OPS | {"fc"}
    gradc.load_params(scope, PASSES / case / "params.npz", program)   # checked, stale fused shapes excepted
    with np.load(PASSES / case / "feed.npz") as saved:
        feed = dict(saved)
    outs = gradc.Executor().run(program, feed, meta["fetches"], scope=scope)
    with np.load(PASSES / case / "expected.npz") as expected:
        for name, got in zip(meta["fetches"], outs):
            np.testing.assert_allclose(got, expected[name], rtol=1e-5, atol=1e-6, err_msg=name)


def _run_pass_case(directory):
    meta = json.loads((directory / "meta.json").read_text())
    program = gradc.load(directory / "model.pdmodel")
    assert gradc.verify(program) == []
    with np.load(directory / "feed.npz") as saved:
        feed = dict(saved)
    return meta, feed, dict(zip(meta["fetches"], gradc.Executor().run(program, feed, meta["fetches"])))


def test_the_miswired_backward_of_x_plus_relu_y_runs_as_its_grad_op_says():
    """fuse_elewise_add_act_pass on x + relu(y) leaves the forward alone and fuses the backward into a
    fused_elemwise_add_activation_grad (functors elementwise_add_grad, relu_grad: Out = X + relu(Y)) whose Y slot
    holds x, whose X@GRAD goes to y@GRAD and Y@GRAD to x@GRAD. gradc runs the op as its slots say: y@GRAD = dOut and
    x@GRAD = dOut relu'(x); Paddle's CPU run of the same program gives y@GRAD = dOut and x@GRAD = 0. Both differ from
    the unfused program's gradients, x@GRAD = dOut and y@GRAD = dOut relu'(y): the rewritten program is wrong."""
    meta, feed, got = _run_pass_case(MISWIRED)
    assert "fused_elemwise_add_activation_grad" in meta["ops_after"]
    assert "elementwise_add" in meta["ops_after"] and "relu" in meta["ops_after"]
    with np.load(MISWIRED / "expected.npz") as true, np.load(MISWIRED / "paddle_fused_run.npz") as paddle_run:
        dout = true["x@GRAD"]   # the unfused program's x@GRAD is dOut itself
        np.testing.assert_allclose(got[meta["fetches"][0]], true[meta["fetches"][0]], rtol=1e-6)
        np.testing.assert_allclose(true["y@GRAD"], dout * (feed["y"] > 0), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(got["y@GRAD"], dout, rtol=1e-6)
        np.testing.assert_allclose(got["x@GRAD"], dout * (feed["x"] > 0), rtol=1e-6)
        np.testing.assert_allclose(paddle_run["y@GRAD"], dout, rtol=1e-6)
        assert not paddle_run["x@GRAD"].any()
        assert np.abs(got["x@GRAD"] - dout).max() > 0.01 and np.abs(got["y@GRAD"] - true["y@GRAD"]).max() > 0.01


def test_yolo_box_post_suppresses_within_a_class_and_keeps_the_suppressed_rows():
    """A 100 x 100 image, one class, one 64 x 64 anchor a head: head 0's 2 x 2 grid holds a box [5, 5, 45, 45] (0.9 x
    0.9), one [35, 5, 75, 45] of the same class (0.8 x 0.9; IoU 1/7 > nms_threshold 0.1: suppressed, its objectness
    0 but its row kept), one [5, 55, 45, 95] of class score 0 (class -1, sorted first) and one under conf_thresh."""
    cells = np.zeros((1, 6, 2, 2), np.float32)   # channels x, y, w, h, objectness, class score
    cells[0, :, 0, 0] = [0.5, 0.5, 0.4, 0.4, 0.9, 0.9]
    cells[0, :, 0, 1] = [0.1, 0.5, 0.4, 0.4, 0.8, 0.9]
    cells[0, :, 1, 0] = [0.5, 0.5, 0.4, 0.4, 0.7, 0.0]
    cells[0, :, 1, 1] = [0.5, 0.5, 0.4, 0.4, 0.1, 0.9]
    empty = np.zeros((1, 6, 1, 1), np.float32)
    program = gradc.Program()
    block = program.global_block
    feed = {"b0": cells, "b1": empty, "b2": empty, "shape": np.full((1, 2), 100, np.float32),
            "scale": np.ones((1, 2), np.float32)}
    for name, value in feed.items():
        block.create_var(name, list(value.shape), gradc.VarType.FP32)
    block.create_var("out", None, None)
    block.create_var("num", None, None)
    attrs = {"anchors0": [64, 64], "anchors1": [64, 64], "anchors2": [64, 64], "class_num": 1, "conf_thresh": 0.5,
             "downsample_ratio0": 32, "downsample_ratio1": 16, "downsample_ratio2": 8, "nms_threshold": 0.1}
    block.append_op("yolo_box_post", {"Boxes0": ["b0"], "Boxes1": ["b1"], "Boxes2": ["b2"], "ImageShape": ["shape"],
                                      "ImageScale": ["scale"]}, {"Out": ["out"], "NmsRoisNum": ["num"]}, attrs)
    out, num = gradc.Executor().run(program, feed, ["out", "num"], gradc.Scope())
    expected = [[-1, 0.7, 5, 55, 45, 95], [0, 0.9, 5, 5, 45, 45], [0, 0.0, 35, 5, 75, 45]]
    np.testing.assert_allclose(out, np.array(expected, np.float32), rtol=1e-6, atol=1e-5)
    assert num.tolist() == [3] and num.dtype == np.int32


def test_cudnn_bn_finalize_blends_the_unbiased_batch_variance_and_one_value_a_channel_its_biased_zero():
    """fused_scale_bias_relu_conv_bn's running variance: momentum * running + (1 - momentum) n / (n - 1) var (the
    fixtures check it against paddle.var(unbiased=True)); with n = 1 there is no unbiased variance and the biased 0
    goes in, as fused_batch_norm_act's kernel does."""
    from test_extra_math import run

    rng = np.random.default_rng(5)
    vectors = {slot: rng.uniform(0.5, 1.5, 2) for slot in ("bn_scale", "bn_bias", "input_running_mean",
                                                           "input_running_var")}
    for size in (3, 1):
        x, w = rng.standard_normal((1, size, size, 3)), rng.standard_normal((2, 3, 1, 1))
        out, running_var = run("fused_scale_bias_relu_conv_bn", {"x": x, "w": w, **vectors},
                               ["out", "out_running_var"], {"data_format": "NHWC", "momentum": 0.9})
        count = size * size
        batch = out.reshape(-1, 2).var(axis=0, ddof=1 if count > 1 else 0)
        momentum = float(np.float32(0.9))   # a FLOAT attribute: float32, as the kernel reads it
        np.testing.assert_allclose(running_var, momentum * vectors["input_running_var"] + (1 - momentum) * batch,
                                   rtol=1e-12)


def test_gradc_run_takes_the_fused_weights_paddles_pass_declares_stale(tmp_path):
    """multihead_matmul_fuse_pass_v3 declares the fused W [hidden, 3, 3] and Bias [3, 3] whatever the heads' size;
    Paddle's executor does not check a loaded shape, and gradc's params check does not hold these two slots to it."""
    case = PASSES / "multihead_attention"
    ran = gradc_cli("run", case / "model.pdmodel", "--params", case / "params.npz", "--feed", case / "feed.npz",
                    "--fetch", "linear_3.tmp_1", "--out", tmp_path / "out.npz")
    assert ran.returncode == 0, ran.stderr
    with np.load(tmp_path / "out.npz") as got, np.load(case / "expected.npz") as expected:
        for name in expected.files:
            np.testing.assert_allclose(got[name], expected[name], rtol=1e-5, atol=1e-6)
    with np.load(case / "params.npz") as params:   # any other parameter keeps its declared shape
        other = next(n for n in params.files if params[n].ndim == 1 and n.endswith(".b_0") and
                     n not in {"linear_0.b_0"})
        params_size = params[other].size
        bad = {**params, other: np.zeros(params_size + 1, params[other].dtype)}
    np.savez(tmp_path / "bad.npz", **bad)
    refused = gradc_cli("run", case / "model.pdmodel", "--params", tmp_path / "bad.npz", "--feed", case / "feed.npz")
    assert refused.returncode == 1 and f"'{other}', read first by block 0, op " in refused.stderr
    assert f"), has shape [{params_size + 1}], but the program declares" in refused.stderr
