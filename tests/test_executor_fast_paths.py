"""The hot ops' direct paths give what their general paths give: stores into the nearest scope holding a var,
the bias grad of an fc layer (a batch of 1 aligned by axis 1 keeps its -0.0, as the general path does), and
the fc matrix products of mul and mul_grad against those of higher-rank operands, and an fc layer's input grad of a
few rows against a big weight (taken as (w @ d.T).T) against numpy's d @ w.T."""

import numpy as np

import gradc
from gradc.executor import KERNELS
from gradc.executor.kernels import blas_bits
from gradc.executor.kernels.matmul import times_transposed
from gradc.layers import ProgramBuilder


def test_a_temporary_held_by_an_outer_scope_is_stored_in_the_nearest_one_that_holds_it():
    net = ProgramBuilder()
    x = net.data("x", [2])
    far = net.op("scale", {"X": x}, {"scale": 2.0}, names=["far"])[0]
    both = net.op("scale", {"X": far}, {"scale": 3.0}, names=["both"])[0]
    root = gradc.Scope()
    root.vars[far], root.vars[both] = np.zeros(2, np.float32), np.zeros(2, np.float32)
    caller = root.child()
    caller.vars[both] = np.zeros(2, np.float32)
    executor = gradc.Executor()
    for step in (1, 2):   # the second run takes the checked, inline store
        executor.run(net.program, {"x": np.array([1, 2], np.float32) * step}, [], caller)
        assert far not in caller.vars and root.vars[far].tolist() == [2 * step, 4 * step]
        assert caller.vars[both].tolist() == [6 * step, 12 * step] and root.vars[both].tolist() == [0, 0]


def _add_grad(dout: np.ndarray, axis: int, x_shape=None) -> np.ndarray:
    program = gradc.Program()
    block = program.global_block
    for name, shape in (("x", x_shape or dout.shape), ("y", dout.shape[-1:]), ("d", dout.shape), ("dy", [3])):
        block.create_var(name, list(shape))
    block.append_op("elementwise_add_grad", {"X": ["x"], "Y": ["y"], "Out@GRAD": ["d"]}, {"Y@GRAD": ["dy"]},
                    {"axis": axis})
    feed = {"x": np.ones(x_shape or dout.shape, np.float32), "y": np.ones(3, np.float32), "d": dout}
    return gradc.Executor().run(program, feed, ["dy"], gradc.Scope())[0]


def test_the_bias_grad_of_an_fc_layer():
    dout = np.array([[1.5, -0.0, 2.0], [0.25, -0.0, -2.0]], np.float32)
    for axis in (-1, 1):
        assert _add_grad(dout, axis).tobytes() == dout.sum(axis=0).tobytes()
    row = np.array([[-0.0, 1.0, -0.0]], np.float32)
    assert np.signbit(_add_grad(row, 1)).tolist() == [True, False, True]   # not summed: as the general path
    assert np.signbit(_add_grad(row, -1)).tolist() == [False, False, False]   # summed over the batch
    assert _add_grad(np.ones((2, 2, 3), np.float32), -1).tolist() == [4, 4, 4]   # the general path


def _squared_fc():
    """sum((x @ w)^2) by mul, x [-1, 4] fed, w [4, 3] a parameter: (net, the mul's output, the loss)."""
    net = ProgramBuilder()
    out = net.op("mul", {"X": net.data("x", [-1, 4]), "Y": net.parameter("w", [4, 3])},
                 {"x_num_col_dims": 1, "y_num_col_dims": 1})[0]
    return net, out, net.op("reduce_sum", {"X": net.op("square", {"X": out})[0]}, {"reduce_all": True})[0]


def test_mul_and_mul_grad_of_matrices_match_their_flattening_path(monkeypatch):
    rng = np.random.default_rng(0)
    net, out, loss = _squared_fc()
    pairs = gradc.append_backward(net.program, loss)
    scope = gradc.Scope()
    scope.vars["w"] = rng.standard_normal((4, 3), dtype=np.float32)
    feed = {"x": rng.standard_normal((5, 4), dtype=np.float32)}
    fetch = [out, "x@GRAD", pairs[0][1]]
    direct = gradc.Executor().run(net.program, feed, fetch, scope)
    mul, mul_grad = KERNELS["mul"], KERNELS["mul_grad"]

    class AsTensors:   # the same operands with a trailing 1-dim: the general path, which flattens them
        def __init__(self, k):
            self._k = k

        def x(self, slot, i=0):
            value = self._k.x(slot, i)
            return value[..., None] if slot in ("X", "Out@GRAD") else value

        def __getattr__(self, name):
            return getattr(self._k, name)

    def unflattened(kernel, squeeze):
        def run(k):
            return {slot: value.reshape(value.shape[:-1]) if slot in squeeze else value
                    for slot, value in kernel(AsTensors(k)).items()}
        return run

    monkeypatch.setitem(KERNELS, "mul", unflattened(mul, ()))   # X [5, 4, 1] flattened at dim 1: Out is [5, 3]
    monkeypatch.setitem(KERNELS, "mul_grad", unflattened(mul_grad, ("X@GRAD",)))
    general = gradc.Executor().run(net.program, feed, fetch, scope)
    assert all(a.tobytes() == b.tobytes() and a.shape == b.shape for a, b in zip(direct, general))


def test_an_op_of_several_outputs_stores_each_where_its_var_lives():
    """mul_grad writes two vars: from the second run on through the plan's per-slot store."""
    rng = np.random.default_rng(1)
    net, out, loss = _squared_fc()
    grad = gradc.append_backward(net.program, loss)[0][1]
    w, feed = rng.standard_normal((4, 3), dtype=np.float32), {"x": rng.standard_normal((5, 4), dtype=np.float32)}
    reference = gradc.Scope()
    reference.vars["w"] = w
    expected = gradc.Executor().run(net.program, feed, [grad], reference)[0]
    scope = gradc.Scope()
    scope.vars.update(w=w, **{grad: np.zeros((4, 3), np.float32)})
    executor = gradc.Executor()
    for _ in range(2):
        executor.run(net.program, feed, [out], scope)
        assert "x@GRAD" not in scope.vars and scope.vars[grad].dtype == np.float32
        assert scope.vars[grad].tobytes() == expected.tobytes()


def test_a_few_rows_times_a_big_transposed_weight_are_numpys_product_bit_for_bit():
    rng = np.random.default_rng(2)
    for rows, inner, outer in [(2, 1024, 256), (5, 601, 500), (32, 512, 512), (33, 512, 512), (2, 64, 64)]:
        d = rng.standard_normal((rows, outer), dtype=np.float32)
        w = rng.standard_normal((inner, outer), dtype=np.float32)
        product = times_transposed(d, w)
        assert product.flags.c_contiguous and product.tobytes() == (d @ w.T).tobytes()


def test_the_swapped_product_is_taken_only_where_this_machines_blas_keeps_the_bits(monkeypatch):
    """On a BLAS whose swapped product differs (OpenBLAS on AMD's Zen), the fast path stays off: d @ w.T."""
    rng = np.random.default_rng(3)
    d, w = rng.standard_normal((8, 512), dtype=np.float32), rng.standard_normal((1024, 512), dtype=np.float32)
    for keeps in (True, False):
        monkeypatch.setattr(blas_bits, "few_rows_times_weight", lambda keeps=keeps: keeps)
        expected = np.ascontiguousarray((w @ d.T).T) if keeps else d @ w.T
        assert times_transposed(d, w).tobytes() == expected.tobytes()
