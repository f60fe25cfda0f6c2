"""The static_nn family (cvm, nce, row_conv), auc, viterbi_decode and class_center_sample: values against Paddle
3.3.1's (tests/data/paddle/static_nn_reference.npz, from tools/paddle_static_nn_reference.py), the samplers'
distributions, cvm's gradient by design, and the places gradc departs from Paddle on purpose."""

import numpy as np
import pytest

import gradc
import test_family_float32 as float32_family
from fixtures import DATA
from gradc.errors import ProgramError
from gradc.executor import randomness
from gradc.ir import VarType
from gradc.layers import ProgramBuilder
from gradc.limits import limited
from gradc.verify_shapes import check_shapes
from gradcheck_cases import static_nn as static_nn_cases
from one_op import kernel_run, run

REFERENCE = np.load(DATA / "static_nn_reference.npz")


def reference(prefix: str) -> dict[str, np.ndarray]:
    return {key.split("/", 1)[1]: REFERENCE[key] for key in REFERENCE.files if key.startswith(prefix + "/")}


def cases(kind: str) -> list[str]:
    return sorted({key.split("/")[0] for key in REFERENCE.files if key.startswith(kind)})


@pytest.mark.parametrize("case", cases("nce"))
def test_nce_forward_and_gradients_are_paddles(case):
    """Each sampler's probabilities (uniform, log-uniform, custom), two true classes, sample weights."""
    ref = reference(case)
    sampler, weighted, *negatives = ref["attrs"].tolist()
    net = ProgramBuilder()
    names = {k: net.data(k, list(ref[k].shape), ref[k].dtype.name) for k in
             ("x", "lab", "w", "b", "sw", "lw", "p", "alias", "aprobs")}
    for k in ("x", "w", "b"):
        net.block.var(k).stop_gradient = False
    inputs = {"Input": "x", "Label": "lab", "Weight": "w", "Bias": "b"}
    inputs |= {"SampleWeight": "sw"} if weighted else {}
    if sampler == 2:
        inputs |= {"CustomDistProbs": "p", "CustomDistAlias": "alias", "CustomDistAliasProbs": "aprobs"}
    outs = net.op("nce", inputs, {"num_total_classes": 6, "num_neg_samples": len(negatives), "sampler": sampler,
                                  "custom_neg_classes": negatives}, outputs=["Cost", "SampleLogits", "SampleLabels"])
    loss = net.op("reduce_sum", {"X": net.op("elementwise_mul", {"X": outs[0], "Y": "lw"})[0]},
                  {"reduce_all": True})[0]
    gradc.append_backward(net.program, loss)
    fetch = [*outs, "x@GRAD", "w@GRAD", "b@GRAD"]
    values = gradc.Executor().run(net.program, {k: ref[k] for k in names}, fetch)
    for name, ours in zip(("cost", "logits", "labels", "x@GRAD", "w@GRAD", "b@GRAD"), values):
        assert ours.dtype == ref[name].dtype
        np.testing.assert_allclose(ours, ref[name], rtol=1e-5, atol=1e-6, err_msg=name)


def _nce_draws(sampler: int, classes: int = 5, seed: int = 0, **tables) -> np.ndarray:
    """The negatives of 4000 rows, 5 per row."""
    inputs = {"Input": np.zeros((4000, 2), np.float32), "Label": np.zeros((4000, 1), np.int64),
              "Weight": np.zeros((classes, 2), np.float32), **tables}
    samples = run("nce", inputs, {"num_total_classes": classes, "num_neg_samples": 5, "sampler": sampler,
                                  "seed": seed})["SampleLabels"]
    return samples[:, 1:]


def test_the_samplers_draw_their_distributions():
    randomness.seed(3)
    uniform = np.bincount(_nce_draws(0).ravel(), minlength=5) / 20000
    np.testing.assert_allclose(uniform, 0.2, atol=0.015)
    # Paddle's log-uniform inverse transform: floor(5^u) - 1 never reaches the last class
    log_uniform = np.bincount(_nce_draws(1).ravel(), minlength=5) / 20000
    expected = np.diff(np.log([1, 2, 3, 4, 5])) / np.log(5)
    np.testing.assert_allclose(log_uniform, [*expected, 0.0], atol=0.015)
    # an alias table of [0.1, 0.2, 0.3, 0.25, 0.15]: each class kept with its probability, else its alias
    tables = {"CustomDistProbs": np.array([0.1, 0.2, 0.3, 0.25, 0.15], np.float32),
              "CustomDistAlias": np.array([2, -1, -1, -1, 3], np.int32),
              "CustomDistAliasProbs": np.array([0.5, 1.0, 1.0, 1.0, 0.75], np.float32)}
    custom = np.bincount(_nce_draws(2, **tables).ravel(), minlength=5) / 20000
    np.testing.assert_allclose(custom, tables["CustomDistProbs"], atol=0.015)


def test_a_seeded_sampler_draws_the_same_negatives_every_run():
    """Paddle seeds its sampler afresh on every run from the seed attribute; seed 0 draws anew."""
    assert (_nce_draws(0, seed=9) == _nce_draws(0, seed=9)).all()
    assert (_nce_draws(0) != _nce_draws(0)).any()


@pytest.mark.parametrize("case", cases("viterbi"))
def test_viterbi_decode_is_paddles(case):
    ref = reference(case)
    out = run("viterbi_decode", {"Input": ref["input"], "Transition": ref["transition"], "Length": ref["length"]},
              {"include_bos_eos_tag": bool(ref["tags"])})
    np.testing.assert_allclose(out["Scores"], ref["scores"], rtol=1e-6)
    assert out["Scores"].dtype == np.float32
    np.testing.assert_array_equal(out["Path"], ref["path"])


@pytest.mark.parametrize("case", cases("auc"))
def test_auc_counts_and_slides_as_paddle(case):
    """Five batches through the same histograms: the window of slide_steps batches, labels -1 not counted,
    probabilities 0 and 1 in the end buckets."""
    ref = reference(case)
    steps, thresholds = ref["attrs"].tolist()
    pos = neg = np.zeros_like(ref["pos0"])
    for batch in range(5):
        out = kernel_run("auc", {"Predict": ref[f"predict{batch}"], "Label": ref[f"label{batch}"], "StatPos": pos,
                                 "StatNeg": neg}, {"num_thresholds": thresholds, "slide_steps": steps})
        pos, neg = out["StatPosOut"], out["StatNegOut"]
        np.testing.assert_array_equal(pos, ref[f"pos{batch}"])
        np.testing.assert_array_equal(neg, ref[f"neg{batch}"])
        assert out["AUC"] == pytest.approx(float(ref[f"auc{batch}"]), abs=1e-12)


def test_a_fake_batch_leaves_the_window_unchanged_but_moves_it():
    """InsTagWeight 0: nothing counted (Paddle 3.3.1 counts it into its step, then subtracts it from the window's
    sum, which goes negative); the step counter still advances."""
    stats = np.zeros(2 * 5 + 1, np.int64)
    predict, label = np.array([[0.9], [0.1]], np.float32), np.array([[1], [0]])
    out = kernel_run("auc", {"Predict": predict, "Label": label, "StatPos": stats, "StatNeg": stats,
                             "InsTagWeight": np.zeros((1, 1), np.float32)},
                     {"num_thresholds": 4, "slide_steps": 1, "curve": "PR"})   # curve is not read, as Paddle's
    np.testing.assert_array_equal(out["StatPosOut"], [0] * 10 + [1])
    assert out["AUC"] == 0.0


def test_auc_without_slide_steps_counts_into_the_first_buckets_of_the_batch_auc_stats():
    """paddle.static.auc(slide_steps=0)'s startup gives its batch AUC (slide_steps + 1) * buckets + 1 counts
    (PaddleRec's DeepFM, DCN, ...): Paddle 3.3.1 counts into the first buckets and writes them as [1, buckets]."""
    predict, label = np.array([[0.9], [0.2], [0.7], [0.4]], np.float32), np.array([[1], [0], [0], [1]])
    stats = {"StatPos": np.zeros(6, np.int64), "StatNeg": np.zeros(6, np.int64)}
    out = kernel_run("auc", {"Predict": predict, "Label": label, **stats}, {"num_thresholds": 4, "slide_steps": 0})
    np.testing.assert_array_equal(out["StatPosOut"], [[0, 1, 0, 1, 0]])
    np.testing.assert_array_equal(out["StatNegOut"], [[1, 0, 1, 0, 0]])
    assert out["AUC"] == pytest.approx(0.75)
    stats = {"StatPos": np.zeros(7, np.int64), "StatNeg": np.zeros(7, np.int64)}
    with pytest.raises(ProgramError, match=r"needs StatPos of 5 or 6 counts, got \[7\]"):
        kernel_run("auc", {"Predict": predict, "Label": label, **stats}, {"num_thresholds": 4, "slide_steps": 0})


def test_auc_is_a_float64_where_the_program_declares_int64():
    """Paddle's legacy programs declare AUC int64 and read it as the float64 its kernel writes."""
    net = ProgramBuilder()
    predict, label = net.data("p", [4, 1]), net.data("label", [4, 1], "int64")
    pos, neg = net.data("pos", [1, 5], "int64"), net.data("neg", [1, 5], "int64")
    net.block.create_var("auc", [], VarType.INT64)
    net.block.append_op("auc", {"Predict": [predict], "Label": [label], "StatPos": [pos], "StatNeg": [neg]},
                        {"AUC": ["auc"], "StatPosOut": [pos], "StatNegOut": [neg]},
                        {"num_thresholds": 4, "slide_steps": 0})
    feed = {"p": np.array([[0.9], [0.2], [0.7], [0.4]], np.float32), "label": np.array([[1], [0], [0], [1]]),
            "pos": np.zeros((1, 5), np.int64), "neg": np.zeros((1, 5), np.int64)}
    (value,) = gradc.Executor().run(net.program, feed, ["auc"])
    assert value.dtype == np.float64 and value == pytest.approx(0.75)


def test_cvm_logs_show_and_click_or_drops_them():
    x = np.array([[3.0, 1.0, 0.5, -2.0], [0.0, 0.0, 1.5, 4.0]], np.float32)
    counts = np.ones((2, 2), np.float32)
    y = run("cvm", {"X": x, "CVM": counts}, {"use_cvm": True})["Y"]
    np.testing.assert_allclose(y, [[np.log(4), np.log(2) - np.log(4), 0.5, -2.0], [0, 0, 1.5, 4.0]], rtol=1e-6)
    assert y.dtype == np.float32
    np.testing.assert_array_equal(run("cvm", {"X": x, "CVM": counts}, {"use_cvm": False})["Y"], x[:, 2:])


@pytest.mark.parametrize("use_cvm", [True, False])
def test_cvm_grad_passes_the_counts_as_the_first_columns_gradient(use_cvm):
    """Paddle's gradient by design: X@GRAD[:, :2] is the CVM input (for the parameter server), not a derivative."""
    x = np.array([[3.0, 1.0, 0.5, -2.0, 1.0]], np.float32)
    counts = np.array([[7.0, 2.0]], np.float32)
    dy = np.arange(1, 6 if use_cvm else 4, dtype=np.float32)[None]
    net = ProgramBuilder()
    for name, value in (("cvm", counts), ("x", x), ("dy", dy)):
        net.data(name, list(value.shape))
    net.block.create_var("dx", [1, 5], VarType.FP32)
    net.block.append_op("cvm_grad", {"CVM": ["cvm"], "X": ["x"], "Y@GRAD": ["dy"]}, {"X@GRAD": ["dx"]},
                        {"use_cvm": use_cvm})
    (dx,) = gradc.Executor().run(net.program, {"cvm": counts, "x": x, "dy": dy}, ["dx"])
    np.testing.assert_array_equal(dx, [[7.0, 2.0, *(dy[0, 2:] if use_cvm else dy[0])]])


def test_row_conv_looks_ahead_within_each_sequence():
    x = np.arange(1, 7, dtype=np.float32).reshape(1, 3, 2)
    weights = np.array([[1.0, 2.0], [10.0, 20.0], [100.0, 200.0]], np.float32)
    out = run("row_conv", {"X": x, "Filter": weights})["Out"]
    # out[t] = sum over w of weights[w] * x[t + w], the steps past the end left out
    np.testing.assert_array_equal(out, [[[1 + 30 + 500, 4 + 80 + 1200], [3 + 50, 8 + 120], [5, 12]]])


def test_class_center_sample_keeps_the_labels_classes_first():
    labels = np.array([7, 2, 7, 5], np.int64)
    randomness.seed(1)
    out = run("class_center_sample", {"Label": labels}, {"num_classes": 10, "num_samples": 6})
    centers = out["SampledLocalClassCenter"]
    np.testing.assert_array_equal(centers[:3], [2, 5, 7])   # the positives, ascending
    np.testing.assert_array_equal(out["RemappedLabel"], [2, 0, 2, 1])
    assert len(set(centers.tolist())) == 6 and set(centers[3:].tolist()).isdisjoint({2, 5, 7})
    # no room left: only the positives
    full = run("class_center_sample", {"Label": labels}, {"num_classes": 10, "num_samples": 2})
    np.testing.assert_array_equal(full["SampledLocalClassCenter"], [2, 5, 7])


def test_class_center_sample_with_fix_seed_draws_the_same_classes():
    attrs = {"num_classes": 50, "num_samples": 10, "fix_seed": True, "seed": 4}
    first, second = (run("class_center_sample", {"Label": np.array([3, 1])}, attrs)["SampledLocalClassCenter"]
                     for _ in range(2))
    np.testing.assert_array_equal(first, second)


@pytest.mark.parametrize("op_type, inputs, slot", [
    ("cvm", {"X": [3, 4], "CVM": [3, 2]}, "X"),
    ("nce", {"Input": [3, 4], "Label": [3, 1], "Weight": [6, 4]}, "Input")])
def test_the_lod_forms_are_refused(op_type, inputs, slot):
    """Sequences of a LoD tensor (lod_level 1) are not supported: the op says so, naming the slot."""
    program = gradc.Program()
    block = program.global_block
    for name, shape in inputs.items():
        block.create_var(name, shape, VarType.INT64 if name == "Label" else VarType.FP32,
                         lod_level=1 if name == slot else None)
    block.append_op(op_type, {name: [name] for name in inputs}, {}, {"num_total_classes": 6} if op_type == "nce"
                    else {})
    with pytest.raises(gradc.ProgramError, match=f"{slot}.*LoD form"):
        check_shapes(program)


def test_an_empty_row_conv_takes_no_step_however_long_its_filter():
    x, weights = np.zeros((1, 2 ** 30, 0), np.float32), np.zeros((2 ** 30, 0), np.float32)
    assert run("row_conv", {"X": x, "Filter": weights})["Out"].shape == (1, 2 ** 30, 0)


def test_nce_of_an_empty_batch_is_empty():
    out = run("nce", {"Input": np.zeros((0, 4), np.float32), "Label": np.zeros((0, 2), np.int64),
                      "Weight": np.zeros((6, 4), np.float32)}, {"num_total_classes": 6, "num_neg_samples": 3})
    assert out["Cost"].shape == (0, 1) and out["SampleLabels"].shape == (0, 5)


@pytest.mark.parametrize("op_type, inputs, attrs, what", [
    ("nce", {"Input": np.zeros((2, 4), np.float32), "Label": np.zeros((2, 1), np.int64),
             "Weight": np.zeros((6, 4), np.float32)}, {"num_total_classes": 6, "num_neg_samples": 2 ** 30},
     "the sampled rows of Weight"),
    ("class_center_sample", {"Label": np.array([1, 3])}, {"num_classes": 2 ** 31 - 1, "num_samples": 4},
     "the list of classes"),
], ids=["nce num_neg_samples", "class_center_sample num_classes"])
def test_draws_sized_by_attributes_are_checked_against_the_memory_limit(op_type, inputs, attrs, what):
    with limited(max_bytes=1 << 20), pytest.raises(gradc.ExecutionError, match=f"{what} of shape .* more than"):
        run(op_type, inputs, attrs)


FIRST_ORDER = [case for case in static_nn_cases.CASES if case.program is None]


@pytest.mark.parametrize("case", FIRST_ORDER, ids=[c.id for c in FIRST_ORDER])
def test_float32_in_float32_out(case):
    """Every gradcheck case of the family (nce's samplers seeded), run in float32: float32 outputs and grads."""
    float32_family.test_float32_in_float32_out(case)
