"""Export Paddle Quantum's (2.4.0, which pins paddlepaddle <= 2.3) variational circuits as Paddle 3 saves them
(inference.json + inference.pdiparams, PIR), with their initial angles (seed 0), for tools/real_models.py: a VQE's
expectation value of a 3-qubit Hamiltonian under a hardware-efficient circuit (RY layer, CNOT cycle, RZ layer, two
RX), on its state-vector and density-matrix simulators, in complex64 and complex128. Needs paddlepaddle 3.3.1 and a
Paddle Quantum checkout with what it imports (matplotlib and its deps, scipy, networkx, cvxpy and qdldl,
scikit-learn and its deps, fastdtw, tqdm, h5py, sympy, mpmath in DEPS):

    PYTHONPATH=DEPS:tools /path/to/paddle/python tools/paddle_quantum_export.py QUANTUM_DIR OUT_DIR [BACKEND:DTYPE ...]

Four things make it run under 3.3.1, none in a circuit's math: QCompute (Baidu's quantum cloud SDK), OpenFermion
and PySCF (chemistry) are imported as empty modules (only its cloud backend and quantum chemistry use them); its
`_zero` gate entry is a [1] tensor again (Paddle >= 2.5's to_tensor(0) is 0-d, and its gates concatenate [1]s);
Paddle's AST conversion leaves its modules alone (paddle.jit.ignore_module: the conversion breaks their
name-mangled `__private` attributes), and its type check takes a traced Value for a tensor; its loss's Hamiltonian
coefficients and Pauli matrices, bare tensors, are registered as buffers (jit.save cannot save them otherwise). The
saved forward takes an unused [1] input (jit.save needs one). One process per circuit, into
OUT_DIR/vqe_<backend>_<dtype>/.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from pathlib import Path

from suite_export import main

SMALLEST = [f"{backend}:{dtype}" for backend in ("state_vector", "density_matrix")
            for dtype in ("complex64", "complex128")]
HAMILTONIAN = [[-0.5, "Z0, Z1"], [0.3, "X0"], [0.2, "Y1, X2"], [0.1, "Z2"]]
STUBBED = ("QCompute", "openfermion", "pyscf")


class _Anything:
    """Whatever a stubbed module's attribute is asked to be (a class to subclass, a setting to set, a call)."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        setattr(self, name, value := _Anything())
        return value

    def __call__(self, *args, **kwargs):
        return _Anything()

    def __mro_entries__(self, bases):
        return (object,)


class _Stubs(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        return importlib.machinery.ModuleSpec(name, self, is_package=True) if name.split(".")[0] in STUBBED else None

    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.__path__, module.__getattr__ = [], lambda name: _Anything()
        return module

    def exec_module(self, module):
        pass


def export_one(out: Path, entry: str) -> str:
    import paddle
    sys.meta_path.insert(0, _Stubs())
    import paddle_quantum as pq
    import paddle_quantum.gate.matrix as gates
    import paddle_quantum.intrinsic as intrinsic
    from paddle_quantum.ansatz import Circuit
    from paddle_quantum.loss import ExpecVal
    backend, dtype = entry.split(":")
    gates._zero = lambda dtype: paddle.zeros([1], dtype)
    type_of = intrinsic._type_fetch
    intrinsic._type_fetch = lambda data: "tensor" if isinstance(data, paddle.pir.Value) else type_of(data)
    paddle.jit.ignore_module([pq])
    pq.set_backend(backend)
    pq.set_dtype(dtype)
    paddle.seed(0)
    hamiltonian = pq.Hamiltonian(HAMILTONIAN)

    class VQE(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.circuit = Circuit(3)
            self.circuit.ry("full")
            self.circuit.cnot("cycle")
            self.circuit.rz("full")
            self.circuit.rx([0, 1])
            self.loss = ExpecVal(hamiltonian)
            self.loss.register_buffer("coeffs", self.loss.coeffs)
            for i, matrix in enumerate(self.loss.matrices):
                self.loss.register_buffer(f"pauli_{i}", matrix)

        def forward(self, unused):
            return self.loss(self.circuit()) + 0 * unused.sum()

    net = VQE()
    net.eval()
    paddle.jit.save(net, str(out / f"vqe_{backend}_{dtype}" / "inference"), [paddle.static.InputSpec([1], "float32")])
    return "OK"


if __name__ == "__main__":
    main(__file__, export_one, SMALLEST)
