"""Random conv geometries: conv2d against a loop over kernel positions, and the grads and
conv2d_transpose as exact adjoints of conv2d (<conv(x), y> = <x, conv^T(y)>)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import gradc
from gradc.backward import append_grad_ops


def run_op(op_type, inputs, attrs, out_grad=None):
    """Output of one op, and with ``out_grad`` also the input grads (through the compiled backward)."""
    program = gradc.Program()
    block = program.global_block
    for slot, value in inputs.items():
        block.create_var(slot, list(value.shape), gradc.VarType.FP64)
    block.create_var("out", None, gradc.VarType.FP64)
    block.append_op(op_type, {slot: [slot] for slot in inputs}, {"Output": ["out"]}, attrs)
    if out_grad is None:
        return gradc.Executor().run(program, inputs, ["out"], gradc.Scope())[0]
    block.var("out").shape = list(out_grad.shape)
    append_grad_ops(program, ["out"])
    fetch = [slot + "@GRAD" for slot in inputs]
    return gradc.Executor().run(program, {**inputs, "out@GRAD": out_grad}, fetch, gradc.Scope())


def reference_conv(x, w, strides, pads, dilations, groups):
    """NCHW conv2d as a sum over kernel positions of strided slices times the filter tap."""
    (sh, sw), (dh, dw), (o, cg, kh, kw) = strides, dilations, w.shape
    xp = np.pad(x, ((0, 0), (0, 0), tuple(pads[:2]), tuple(pads[2:])))
    oh = (xp.shape[2] - (kh - 1) * dh - 1) // sh + 1
    ow = (xp.shape[3] - (kw - 1) * dw - 1) // sw + 1
    out = np.zeros((x.shape[0], o, oh, ow))
    og = o // groups
    for g in range(groups):
        xg, wg = xp[:, g * cg:(g + 1) * cg], w[g * og:(g + 1) * og]
        for i in range(kh):
            for j in range(kw):
                taps = xg[:, :, i * dh:i * dh + (oh - 1) * sh + 1:sh, j * dw:j * dw + (ow - 1) * sw + 1:sw]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", taps, wg[:, :, i, j])
    return out


@st.composite
def geometries(draw):
    groups = draw(st.integers(1, 3))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    strides = [draw(st.integers(1, 3)), draw(st.integers(1, 3))]
    dilations = [draw(st.integers(1, 2)), draw(st.integers(1, 2))]
    pads = [draw(st.integers(0, 2)) for _ in range(4)]
    h = draw(st.integers((kh - 1) * dilations[0] + 1, 7))
    w = draw(st.integers((kw - 1) * dilations[1] + 1, 7))
    shapes = ((draw(st.integers(1, 2)), groups * draw(st.integers(1, 2)), h, w),
              (groups * draw(st.integers(1, 2)), None, kh, kw))
    return shapes, {"strides": strides, "paddings": pads, "dilations": dilations, "groups": groups,
                    "data_format": draw(st.sampled_from(["NCHW", "NHWC"]))}


def nhwc(a, attrs):
    return a.transpose(0, 2, 3, 1) if attrs["data_format"] == "NHWC" else a


def nchw(a, attrs):
    return a.transpose(0, 3, 1, 2) if attrs["data_format"] == "NHWC" else a


@settings(max_examples=40, deadline=None)
@given(geometries(), st.integers(0, 2**31))
def test_conv2d_matches_the_loop_and_its_grads_are_adjoints(geometry, seed):
    ((n, c, h, w), (o, _, kh, kw)), attrs = geometry
    rng = np.random.default_rng(seed)
    x, f = rng.standard_normal((n, c, h, w)), rng.standard_normal((o, c // attrs["groups"], kh, kw))
    expected = reference_conv(x, f, attrs["strides"], attrs["paddings"], attrs["dilations"], attrs["groups"])
    out = nchw(run_op("conv2d", {"Input": nhwc(x, attrs), "Filter": f}, attrs), attrs)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)
    dy = rng.standard_normal(out.shape)
    dx, df = run_op("conv2d", {"Input": nhwc(x, attrs), "Filter": f}, attrs, out_grad=nhwc(dy, attrs))
    # the conv is bilinear: <dy, conv(x, f)> = <dL/dx, x> = <dL/df, f>
    np.testing.assert_allclose(np.sum(nchw(dx, attrs) * x), np.sum(dy * out), rtol=1e-10)
    np.testing.assert_allclose(np.sum(df * f), np.sum(dy * out), rtol=1e-10)


@settings(max_examples=40, deadline=None)
@given(geometries(), st.integers(0, 2**31))
def test_conv2d_transpose_is_the_adjoint_of_conv2d(geometry, seed):
    ((n, c, h, w), (o, _, kh, kw)), attrs = geometry
    rng = np.random.default_rng(seed)
    f = rng.standard_normal((o, c // attrs["groups"], kh, kw))  # conv: c -> o; its transpose: o -> c
    x = rng.standard_normal((n, c, h, w))
    down = nchw(run_op("conv2d", {"Input": nhwc(x, attrs), "Filter": f}, attrs), attrs)
    y = rng.standard_normal(down.shape)
    up = nchw(run_op("conv2d_transpose", {"Input": nhwc(y, attrs), "Filter": f}, {**attrs, "output_size": [h, w]}),
              attrs)
    assert up.shape == x.shape
    np.testing.assert_allclose(np.sum(up * x), np.sum(y * down), rtol=1e-10)
