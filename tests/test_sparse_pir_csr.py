"""PIR programs of paddle.sparse's CSR API (gradc.pir.table.sparse_csr_rows): Paddle 3.3.1 loaded gradc's export of
tests/sparse_fixtures.py's csr_program (conversions dense/COO -> CSR -> COO, dense -> COO, values, to_dense and the
elementwise ops of a CSR tensor), checked every op's names against its own definitions, wrote it back and ran it
(fixture pir_csr, tools/paddle_sparse_pir_csr.py). gradc runs Paddle's file to Paddle's numbers and exports it again.
The ops Paddle has no CPU kernel of (products of two sparse tensors, acos, acosh) Paddle loaded and wrote back
(unrun.json): gradc runs that to numpy's numbers."""

import json

import numpy as np

import gradc
from gradc.pir import load_pir, parse_pir, serialize_pir
from sparse_fixtures import DATA, csr_program, csr_training

FOLDER = DATA / "pir_csr"


def _fetched(program) -> list[str]:
    return [op.input_names()[0] for op in program.global_block.ops if op.type == "fetch"]


def test_paddles_csr_program_runs_to_its_numbers_and_exports_again():
    feed, expected = dict(np.load(FOLDER / "feed.npz")), dict(np.load(FOLDER / "expected.npz"))
    names = json.loads((FOLDER / "meta.json").read_text())["fetch"]
    program = load_pir(str(FOLDER / "model.json"))
    types = {op.type for op in program.global_block.ops}
    assert {"sparse_to_sparse_csr", "sparse_to_sparse_coo", "sparse_relu", "sparse_sin", "sparse_softmax"} <= types
    outs = gradc.Executor().run(program, feed, _fetched(program))
    assert len(outs) == len(names) == 26
    for name, out in zip(names, outs):
        np.testing.assert_allclose(out, expected[name], rtol=1e-6, atol=1e-7, err_msg=name)
    data = serialize_pir(program, fetch=_fetched(program))
    for pir in (b"coo_to_csr_sp", b"dense_to_csr_sp", b"csr_to_coo_sp", b"dense_to_coo_sp", b"csr_to_dense_sp",
                b"values_csr_sp", b"relu_csr_sp", b"sin_csr_sp", b"softmax_csr_sp"):
        assert b'"1.' + pir + b'"' in data
    again = parse_pir(data)
    for out, rerun in zip(outs, gradc.Executor().run(again, feed, _fetched(again))):
        np.testing.assert_array_equal(rerun, out)


def test_paddles_file_of_the_ops_it_cannot_run_runs_to_numpys_numbers():
    feed = csr_program(unrun=True)["feed"]
    program = load_pir(str(FOLDER / "unrun.json"))
    assert [op.type for op in program.global_block.ops].count("sparse_matmul") == 2
    outs = gradc.Executor().run(program, feed, _fetched(program))
    x, w = np.zeros((3, 4), np.float32), np.zeros((4, 2), np.float32)
    np.add.at(x, tuple(feed["idx"]), feed["val"])
    np.add.at(w, tuple(feed["w_idx"]), feed["w_val"])
    held = x != 0
    expected = [x @ w, x @ w, *[np.where(held, np.arccos(x), 0), np.where(held, np.arccosh(x + 1), 0)] * 2]
    for out, want in zip(outs, expected, strict=True):
        np.testing.assert_allclose(out, want, rtol=1e-6)
    data = serialize_pir(program, fetch=_fetched(program))
    assert b'"1.matmul_coo_coo_sp"' in data and b'"1.matmul_csr_csr_sp"' in data and b'"1.acosh_csr_sp"' in data


def test_paddles_copy_of_gradcs_csr_training_program_gives_gradcs_gradients():
    """Paddle read gradc's training program (the CSR grad ops as its relu/softmax_csr_grad_sp, add_csr_csr_sp and
    _grad_sp, to_dense_grad_sp), checked its names and wrote it back; it cannot run it (docs/sparse.md)."""
    train = csr_training()
    ours = gradc.Executor().run(train["program"], train["feed"], train["fetch"])
    program = load_pir(str(FOLDER / "train.json"))
    types = [op.type for op in program.global_block.ops]
    assert {"sparse_relu_grad", "sparse_softmax_grad", "sparse_add_grad", "sparse_to_dense_grad"} <= set(types)
    assert _fetched(program)[:3] == train["fetch"]
    theirs = gradc.Executor().run(program, train["feed"], train["fetch"])
    for mine, again in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(again, mine, rtol=1e-6, atol=1e-7)
    assert np.abs(ours[1]).max() > 0 and np.abs(ours[2]).max() > 0
