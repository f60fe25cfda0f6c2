"""sparse_maxpool (paddle.sparse.nn.MaxPool3D, gradc.ops.sparse_pool), which neither of Paddle 3.3.1's static modes
builds: its output sites and values against a dense numpy pooling over the sites (each output position whose window
holds a site, its maximum over the sites there, not over the window's zeros), and its gradient sending dout to each
window's maximum (also through PIR's maxpool_sp and maxpool_grad_sp and back). Central differences check the
gradient too (tests/gradcheck_cases/sparse.py)."""

import itertools

import numpy as np
import pytest

import gradc
from gradc.executor.sparse_value import SparseCoo
from gradc.ir import VarType
from gradc.pir import parse_pir, serialize_pir
from sparse_fixtures import DATA
from test_sparse import one_op, random_coo


def _reference(x: SparseCoo, kernel, strides, paddings, dilations):
    """{output site: (the maximum per channel, the input site holding it per channel)} by brute force."""
    held = {tuple(site): value for site, value in zip(x.indices.T.tolist(), x.values)}
    spatial = np.array(x.shape[1:4])
    out_dims = (spatial + 2 * np.array(paddings) - np.array(dilations) * (np.array(kernel) - 1) - 1) \
        // np.array(strides) + 1
    found = {}
    for n, *o in itertools.product(range(x.shape[0]), *map(range, out_dims)):
        window = [(n, *(np.array(o) * strides - paddings + np.array(k) * dilations))
                  for k in itertools.product(*map(range, kernel))]
        present = [(site, held[site]) for site in map(lambda w: tuple(int(v) for v in w), window) if site in held]
        if present:
            values = np.stack([v for _, v in present])
            found[(n, *o)] = (values.max(0), [present[i][0] for i in values.argmax(0)])
    return found, (x.shape[0], *out_dims.tolist(), x.shape[4])


@pytest.mark.parametrize("kernel, strides, paddings, dilations", [
    ([3, 3, 3], [2, 2, 2], [1, 1, 1], [1, 1, 1]), ([2, 2, 2], [1, 1, 1], [0, 0, 0], [1, 1, 1]),
    ([2, 3, 1], [1, 2, 1], [0, 1, 0], [2, 1, 1])])
def test_maxpool_is_the_dense_pooling_over_the_sites(kernel, strides, paddings, dilations):
    rng = np.random.default_rng(12)
    x = random_coo(rng, 40, (2, 5, 6, 5), 3)
    attrs = {"kernel_sizes": kernel, "strides": strides, "paddings": paddings, "dilations": dilations}
    out = one_op("sparse_maxpool", {"x": x}, attrs)
    expected, dims = _reference(x, kernel, strides, paddings, dilations)
    assert out.shape == dims
    assert [tuple(site) for site in out.indices.T.tolist()] == sorted(expected)   # sorted, every window with a site
    np.testing.assert_array_equal(out.values, np.stack([expected[site][0] for site in sorted(expected)]))


def _gradient(x: SparseCoo, attrs: dict, r: np.ndarray) -> np.ndarray:
    """d sum(to_dense(maxpool(x)) * r) / d x's values, by gradc's backward and again through its PIR export."""
    program = gradc.Program()
    block = program.global_block
    feed = {"val": x.values, "idx": x.indices, "r": r}
    for name, value in feed.items():
        block.create_var(name, list(value.shape), gradc.ir.to_var_type(value.dtype))
    block.var("val").stop_gradient = False
    for name, shape in (("x", list(x.shape)), ("out", list(r.shape))):
        block.create_var(name, shape, gradc.ir.to_var_type(x.dtype), type=VarType.SPARSE_COO)
    for name in ("rulebook", "counter"):
        block.create_var(name, None, VarType.INT32)
    for name, shape in (("dense", list(r.shape)), ("p", list(r.shape)), ("loss", [])):
        block.create_var(name, shape, gradc.ir.to_var_type(x.dtype))
    block.append_op("sparse_sparse_coo_tensor", {"values": ["val"], "indices": ["idx"]}, {"out": ["x"]},
                    {"shape": list(x.shape)})
    block.append_op("sparse_maxpool", {"x": ["x"]}, {"out": ["out"], "rulebook": ["rulebook"], "counter": ["counter"]},
                    attrs)
    block.append_op("sparse_to_dense", {"x": ["out"]}, {"out": ["dense"]})
    block.append_op("elementwise_mul", {"X": ["dense"], "Y": ["r"]}, {"Out": ["p"]}, {"axis": -1})
    block.append_op("reduce_sum", {"X": ["p"]}, {"Out": ["loss"]}, {"reduce_all": True, "dim": []})
    (grad,) = gradc.gradients(program, "loss", ["val"])
    (got,) = gradc.Executor().run(program, feed, [grad])
    data = serialize_pir(program, fetch=[grad])
    assert b'"1.maxpool_sp"' in data and b'"1.maxpool_grad_sp"' in data
    np.testing.assert_array_equal(gradc.Executor().run(parse_pir(data), feed, [grad])[0], got)
    return got


def test_its_gradient_goes_to_each_windows_maximum():
    rng = np.random.default_rng(13)
    x = random_coo(rng, 30, (2, 4, 4, 4), 2)
    attrs = {"kernel_sizes": [2, 2, 2], "strides": [2, 2, 2], "paddings": [0, 0, 0], "dilations": [1, 1, 1]}
    r = rng.standard_normal((2, 2, 2, 2, 2))
    expected = np.zeros_like(x.values)
    row = {tuple(site): i for i, site in enumerate(x.indices.T.tolist())}
    for site, (_, holders) in _reference(x, [2, 2, 2], [2, 2, 2], [0, 0, 0], [1, 1, 1])[0].items():
        for channel, holder in enumerate(holders):
            expected[row[holder], channel] += r[site][channel]
    np.testing.assert_array_equal(_gradient(x, attrs, r), expected)


SETTINGS = [(3, 2, 1), (2, 1, 0), ((2, 3, 1), (1, 2, 1), (0, 1, 0))]   # tools/paddle_sparse_maxpool_fixture.py's


@pytest.mark.parametrize("setting", range(3))
def test_maxpool_and_its_gradient_are_paddles_dygraph_ones(setting):
    """Fixture maxpool (tools/paddle_sparse_maxpool_fixture.py): Paddle's MaxPool3D in dygraph."""
    feed, expected = dict(np.load(DATA / "maxpool" / "feed.npz")), dict(np.load(DATA / "maxpool" / "expected.npz"))
    kernel, stride, padding = ([v] * 3 if isinstance(v, int) else list(v) for v in SETTINGS[setting])
    attrs = {"kernel_sizes": kernel, "strides": stride, "paddings": padding, "dilations": [1, 1, 1]}
    x = SparseCoo(feed["idx"], feed["val"], (2, 5, 6, 5, 3))
    out = one_op("sparse_maxpool", {"x": x}, attrs)
    np.testing.assert_array_equal(out.indices, expected[f"{setting}:indices"])
    np.testing.assert_array_equal(out.values, expected[f"{setting}:values"])
    np.testing.assert_allclose(_gradient(x, attrs, feed[f"r{setting}"]), expected[f"{setting}:grad"], rtol=1e-6)
