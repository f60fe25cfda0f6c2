"""Selection and loss ops beyond the per-op gradchecks: arg_max/arg_min and top_k attributes, the loss ops'
reductions and ignored labels, and the forward values their grad ops read."""

import numpy as np

from fixtures import DATA
from gradc import registry
from one_op import grad_op_of, run

r = np.random.default_rng(8)


def test_arg_max_min_attributes():
    x = r.standard_normal((3, 4, 5))
    out = run("arg_max", {"X": x}, {"axis": -1, "keepdims": True})["Out"]
    np.testing.assert_array_equal(out, np.argmax(x, -1)[..., None])
    assert out.dtype == np.int64
    out = run("arg_min", {"X": x}, {"axis": 1, "dtype": 2})["Out"]
    np.testing.assert_array_equal(out, np.argmin(x, 1))
    assert out.dtype == np.int32
    assert run("arg_max", {"X": x}, {"flatten": True})["Out"] == np.argmax(x)
    assert not registry.get("arg_max").differentiable


def test_top_k_v2_values_indices_and_grad_slots():
    x = np.array([[3.0, 1.0, 4.0, 1.0, 5.0], [9.0, 2.0, 6.0, 5.0, 3.0]])
    out = run("top_k_v2", {"X": x}, {"k": 3})
    np.testing.assert_array_equal(out["Out"], [[5, 4, 3], [9, 6, 5]])
    np.testing.assert_array_equal(out["Indices"], [[4, 2, 0], [0, 2, 3]])
    small = run("top_k_v2", {"X": x}, {"k": 2, "axis": 0, "largest": False})
    np.testing.assert_array_equal(small["Indices"], [[0, 0, 0, 0, 1], [1, 1, 1, 1, 0]])
    grad = grad_op_of("top_k_v2", {"X": x}, {"k": 2})
    assert grad.type == "top_k_v2_grad" and sorted(grad.inputs) == ["Indices", "K", "Out@GRAD", "X"]


def test_top_k_names_tied_elements_as_paddle_does():
    """Paddle 3.3.1's CPU top_k_v2 and top_k pick among equal values (and NaNs) as libstdc++'s partial_sort or
    nth_element and sort leave them, unsorted output too (tests/data/paddle/topk_ties.npz, tools/paddle_topk_ties.py:
    115 cases of both algorithms): a real model's top_k over saturated scores picked other boxes than numpy's order."""
    with np.load(DATA / "topk_ties.npz") as record:
        cases, xs, expected = record["cases"], record["x"], record["indices"]
    start = finish = 0
    for is_v2, k, largest, ordered, width in cases.tolist():
        x, start = xs[start:start + 3 * width].reshape(3, width), start + 3 * width
        indices, finish = expected[finish:finish + 3 * k].reshape(3, k), finish + 3 * k
        attrs = {"k": k, "axis": -1, "largest": bool(largest), "sorted": bool(ordered)} if is_v2 else {"k": k}
        got = run("top_k_v2" if is_v2 else "top_k", {"X": x}, attrs)
        np.testing.assert_array_equal(got["Indices"], indices, err_msg=f"{'v2' if is_v2 else 'v1'} {attrs}")
        np.testing.assert_array_equal(got["Out"], np.take_along_axis(x, indices.astype(np.int64), axis=1))
    assert start == len(xs) and finish == len(expected)


def test_kldiv_loss_reductions():
    x, target = np.log(r.uniform(0.1, 1, (3, 4))), r.uniform(0, 1, (3, 4))
    target[0, 0] = 0.0
    elementwise = np.where(target > 0, target * (np.log(np.where(target > 0, target, 1)) - x), 0)
    cases = {"none": elementwise, "sum": elementwise.sum(), "mean": elementwise.mean(),
             "batchmean": elementwise.sum() / 3}
    for reduction, expect in cases.items():
        loss = run("kldiv_loss", {"X": x, "Target": target}, {"reduction": reduction})["Loss"]
        assert loss.shape == np.shape(expect)
        np.testing.assert_allclose(loss, expect)


def test_sigmoid_cross_entropy_ignore_index_and_normalize():
    x = r.standard_normal((2, 3))
    label = np.array([[1.0, 0.0, -1.0], [0.3, -1.0, 1.0]])
    out = run("sigmoid_cross_entropy_with_logits", {"X": x, "Label": label},
              {"ignore_index": -1, "normalize": True})["Out"]
    expect = np.where(label == -1, 0, np.logaddexp(0, x) - x * label) / 4
    np.testing.assert_allclose(out, expect)


def test_huber_loss_grad_reads_residual_and_bce_matches_its_formula():
    x, y = r.standard_normal((3, 2)), r.standard_normal((3, 2))
    out = run("huber_loss", {"X": x, "Y": y}, {"delta": 0.5})
    residual = y - x
    np.testing.assert_allclose(out["Residual"], residual)
    np.testing.assert_allclose(out["Out"], np.where(np.abs(residual) <= 0.5, 0.5 * residual ** 2,
                                                    0.5 * (np.abs(residual) - 0.25)))
    grad = grad_op_of("huber_loss", {"X": x, "Y": y})
    assert sorted(grad.inputs) == ["Out@GRAD", "Residual"]
    p, label = r.uniform(0.1, 0.9, (4,)), np.array([0.0, 1.0, 0.5, 1.0])
    np.testing.assert_allclose(run("bce_loss", {"X": p, "Label": label})["Out"],
                               -(label * np.log(p) + (1 - label) * np.log(1 - p)))


def test_softmax_with_cross_entropy_keeps_the_class_axis_and_ignores_labels():
    logits = r.standard_normal((3, 4, 2))
    label = np.array([[[1, 0]], [[-1, 3]], [[2, -1]]])
    out = run("softmax_with_cross_entropy", {"Logits": logits, "Label": label}, {"axis": 1, "ignore_index": -1})
    assert out["Loss"].shape == (3, 1, 2)
    log_prob = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    assert out["Loss"][1, 0, 0] == 0 and out["Loss"][2, 0, 1] == 0
    np.testing.assert_allclose(out["Loss"][1, 0, 1], -log_prob[1, 3, 1])
