"""Expected outputs of fusion_seqexpand_concat_fc (tests/data/paddle/seqexpand_concat_fc): Paddle 3.3.1 still has
seq_concat_fc_fuse_pass, which writes the op, but registers no fusion_seqexpand_concat_fc, so nothing Paddle runs holds
it. The numbers are Paddle's CPU run, in float64, of the legacy layers the pass replaces: sequence_expand of each
later input by the first's LoD, concat along axis 1, fc with an activation. Run with Paddle 3.3.1:

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_seqexpand_concat_fc.py

Per case <name>.npz holds x0 (with its LoD offsets as x0.lod), x1, x2, w, b (absent without a bias) and out.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests/data/paddle/seqexpand_concat_fc"
LOD = [0, 2, 5, 6]   # three sequences, of 2, 3 and 1 rows
# case -> (the fc's activation, whether it has a bias)
CASES = {"relu_bias": ("relu", True), "tanh": ("tanh", False), "identity_bias": (None, True)}


def write_case(paddle, name: str, act: str | None, bias: bool) -> None:
    from paddle.base import core
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        x0 = paddle.static.data("x0", [-1, 3], "float64", lod_level=1)
        x1 = paddle.static.data("x1", [-1, 2], "float64")
        x2 = paddle.static.data("x2", [-1, 4], "float64")
        expanded = [paddle.static.nn.sequence_lod.sequence_expand(x, x0) for x in (x1, x2)]
        out = paddle.static.nn.fc(paddle.concat([x0, *expanded], axis=1), 5, activation=act,
                                  bias_attr=None if bias else False)
    rng = np.random.default_rng(sorted(CASES).index(name))
    feeds = {"x0": rng.standard_normal((LOD[-1], 3)), "x1": rng.standard_normal((3, 2)),
             "x2": rng.standard_normal((3, 4))}
    executor = paddle.static.Executor(paddle.CPUPlace())
    executor.run(startup)
    params = {p.name: rng.standard_normal(p.shape) for p in main.all_parameters()}
    for pname, value in params.items():
        paddle.static.global_scope().find_var(pname).get_tensor().set(value, paddle.CPUPlace())
    tensor = core.DenseTensor()
    tensor.set(feeds["x0"], paddle.CPUPlace())
    tensor.set_recursive_sequence_lengths([np.diff(LOD).tolist()])
    result = executor.run(main, feed={**feeds, "x0": tensor}, fetch_list=[out], return_numpy=False)[0]
    weights = {"w" if value.ndim == 2 else "b": value for value in params.values()}
    np.savez(OUT / f"{name}.npz", **feeds, **weights, out=np.asarray(result), **{"x0.lod": np.array(LOD)})
    print(f"{name}: out {np.asarray(result).shape}, parameters {sorted(weights)}")


def main() -> None:
    os.environ.setdefault("FLAGS_enable_pir_api", "0")
    import paddle
    paddle.enable_static()
    for name, (act, bias) in CASES.items():
        write_case(paddle, name, act, bias)


if __name__ == "__main__":
    main()
