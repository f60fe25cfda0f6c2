"""Fixture csr_ops: Paddle 3.3.1's CSR forms of subtract, multiply, divide, divide by a number, transpose, reshape,
slice and sum (its *_csr CPU kernels), from dygraph (no static mode of Paddle can make a CSR tensor: docs/sparse.md):

    /path/to/paddle/python tools/paddle_sparse_csr_ops.py tests/data/paddle/sparse_tensor/csr_ops

Float64 [3, 4] matrices and [2, 3, 5] batches with 40% zeros (y of divide has none) go to feed.npz. Each case runs in
a process of its own (some of Paddle's kernels corrupt the heap or crash) and writes to expected.npz the result's
crows, cols, values and shape (<case>:out_crows, ...) and, where Paddle's backward is right, x's (and y's) gradient
of sum(out's values * r) as a CSR tensor (<case>:x_grad_crows, ..._cols, ..._values; r in feed.npz as <case>:r),
seeded by paddle.autograd.backward (Paddle's CSR to_dense and values() have no backward). The cases whose backward
Paddle gets wrong are run forward only here; the tool prints how far their gradients are from float64 central
differences, and which cases crash.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

PERMS_3D = ([0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0])
# case: (function name, inputs, arguments, whether Paddle's gradients are recorded)
CASES = {
    "subtract:2d": ("subtract", ("a2", "b2"), {}, False), "subtract:3d": ("subtract", ("a3", "b3"), {}, False),
    "multiply:2d": ("multiply", ("a2", "b2"), {}, True), "multiply:3d": ("multiply", ("a3", "b3"), {}, False),
    "divide:2d": ("divide", ("a2", "full2"), {}, True), "divide:3d": ("divide", ("a3", "full3"), {}, False),
    "divide_scalar:2d": ("divide", ("a2",), {"y": -2.5}, True),
    "divide_scalar:3d": ("divide", ("a3",), {"y": 4.0}, True),
    "transpose:2d": ("transpose", ("a2",), {"perm": [1, 0]}, True),
    **{f"transpose:3d:{''.join(map(str, p))}": ("transpose", ("a3",), {"perm": p}, True) for p in PERMS_3D},
    "reshape:2d": ("reshape", ("a2",), {"shape": [4, 3]}, True),
    "reshape:2d_to_3d": ("reshape", ("a2",), {"shape": [2, 2, 3]}, True),
    "reshape:3d": ("reshape", ("a3",), {"shape": [5, 3, 2]}, True),
    "reshape:3d_to_2d": ("reshape", ("a3",), {"shape": [6, 5]}, True),
    "slice:2d": ("slice", ("a2",), {"axes": [0, 1], "starts": [1, 1], "ends": [3, 3]}, True),
    "slice:3d": ("slice", ("a3",), {"axes": [0, 1, 2], "starts": [0, 1, 1], "ends": [2, 3, 4]}, True),
    "slice:3d_cols": ("slice", ("a3",), {"axes": [2], "starts": [1], "ends": [4]}, True),
    "sum:2d_all": ("sum", ("a2",), {}, True),
    "sum:2d_rows": ("sum", ("a2",), {"axis": -1}, False),
    "sum:3d_all": ("sum", ("a3",), {}, True),
    "sum:3d_all_keepdim": ("sum", ("a3",), {"keepdim": True}, True),
    "sum:3d_rows_keepdim": ("sum", ("a3",), {"axis": -1, "keepdim": True}, True),
    "sum:3d_4cols_rows_keepdim": ("sum", ("c3",), {"axis": -1, "keepdim": True}, True),
    "sum:3d_4cols_rows": ("sum", ("c3",), {"axis": -1}, False),
}


def _inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    feed = {}
    for name, shape in (("a2", (3, 4)), ("b2", (3, 4)), ("a3", (2, 3, 5)), ("b3", (2, 3, 5)), ("c3", (2, 3, 4))):
        value = rng.standard_normal(shape)
        value[rng.random(shape) < 0.4] = 0
        feed[name] = value
    for name, shape in (("full2", (3, 4)), ("full3", (2, 3, 5))):
        feed[name] = rng.choice([-1, 1], shape) * rng.uniform(0.5, 1.5, shape)
    return feed


def _run(case: str, feed: dict, r: np.ndarray | None = None):
    """(out, the input CSR tensors, loss) of ``case`` in dygraph; the loss seeded with r when r is given."""
    import paddle
    import paddle.sparse as sp
    function, names, kwargs, _ = CASES[case]
    inputs = []
    for name in names:
        tensor = paddle.to_tensor(feed[name]).to_sparse_csr()
        tensor.stop_gradient = False
        inputs.append(tensor)
    out = getattr(sp, function)(*inputs, **kwargs)
    if r is not None:
        seed = sp.sparse_csr_tensor(out.crows(), out.cols(), paddle.to_tensor(r), out.shape)
        paddle.autograd.backward([out], [seed])
    return out, inputs


def _one(case: str, folder: Path) -> None:
    """Run ``case`` and write its arrays to folder/<case>.npz."""
    feed = dict(np.load(folder / "feed.npz"))
    out, _ = _run(case, feed)
    result = {f"{case}:out_{part}": getattr(out, part)().numpy() for part in ("crows", "cols", "values")}
    result[f"{case}:out_shape"] = np.array(out.shape)
    r = np.random.default_rng(len(case)).standard_normal(out.values().shape)
    result[f"{case}:r"] = r
    if CASES[case][3]:
        _, inputs = _run(case, feed, r)
        for slot, tensor in zip(("x", "y"), inputs):
            for part in ("crows", "cols", "values"):
                result[f"{case}:{slot}_grad_{part}"] = getattr(tensor.grad, part)().numpy()
    np.savez(folder / f"{case.replace(':', '_')}.npz", **result)
    if not CASES[case][3]:
        _report_gradient(case, feed, r)


def _report_gradient(case: str, feed: dict, r: np.ndarray, step: float = 1e-6) -> None:
    """How far Paddle's gradient of x's values is from central differences (the grad is read in a new run)."""
    _, inputs = _run(case, feed, r)
    grad = inputs[0].grad
    dense_x = feed[CASES[case][1][0]]
    sites = tuple(np.stack(np.nonzero(dense_x)))
    theirs = grad.to_dense().numpy()[sites]
    numeric = []
    for site in zip(*sites):
        shifted = []
        for sign in (1, -1):
            moved = dict(feed)
            moved[CASES[case][1][0]] = dense_x.copy()
            moved[CASES[case][1][0]][site] += sign * step
            shifted.append(float((_run(case, moved)[0].values().numpy() * r).sum()))
        numeric.append((shifted[0] - shifted[1]) / (2 * step))
    print(f"{case}: Paddle's x gradient differs from central differences by "
          f"{np.abs(theirs - np.array(numeric)).max():.3g} (x's values: {grad.values().shape[0]} for nnz "
          f"{len(numeric)})")


def main(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    feed = _inputs()
    np.savez(folder / "feed.npz", **feed)
    expected = {}
    for case in CASES:
        try:
            run = subprocess.run([sys.executable, __file__, "--case", case, str(folder)], capture_output=True,
                                 text=True, timeout=120)
        except subprocess.TimeoutExpired:
            run = subprocess.CompletedProcess([], "hangs", "", "")
        print("\n".join(line for line in run.stdout.splitlines() if "differs" in line))
        part = folder / f"{case.replace(':', '_')}.npz"
        if run.returncode:
            lost = "" if part.exists() else ", no forward result"
            print(f"{case}: Paddle fails (exit status: {run.returncode}){lost}: "
                  f"{[line for line in run.stderr.splitlines() if 'rror' in line or 'free' in line][:2]}")
        if not part.exists():
            continue
        expected.update(np.load(part))
        part.unlink()
    np.savez(folder / "expected.npz", **expected)
    print(f"csr_ops: {len(expected)} arrays")


if __name__ == "__main__":
    if sys.argv[1] == "--case":
        _one(sys.argv[2], Path(sys.argv[3]))
    else:
        main(Path(sys.argv[1]))
