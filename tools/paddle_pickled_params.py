"""Paddle's pickled state files for tests/data/paddle/pickled: a dygraph Linear + BatchNorm1D after one Adam step
(paddle.save of its state_dict -> layer.pdparams, keyed by layer paths, and of the optimizer's -> layer.pdopt)
and a static program saved by paddle.static.save (static.pdparams / static.pdopt; its .pdmodel is not kept), plus
every value as Paddle holds it (layer.npz, static.npz) to compare what gradc reads.

    FLAGS_enable_pir_api=0 /path/to/paddle/python tools/paddle_pickled_params.py tests/data/paddle/pickled
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import paddle


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    paddle.seed(2024)
    net = paddle.nn.Sequential(paddle.nn.Linear(3, 4), paddle.nn.BatchNorm1D(4))
    opt = paddle.optimizer.Adam(parameters=net.parameters(), learning_rate=0.1)
    net(paddle.randn([5, 3])).mean().backward()
    opt.step()
    paddle.save(net.state_dict(), str(out / "layer.pdparams"))
    paddle.save(opt.state_dict(), str(out / "layer.pdopt"))
    np.savez(out / "layer.npz", **{p.name: p.numpy() for p in net.state_dict().values()})
    paddle.enable_static()
    main_program, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main_program, startup):
        x = paddle.static.data("x", [-1, 3])
        loss = paddle.mean(paddle.nn.Linear(3, 2)(x))
        paddle.optimizer.SGD(0.1).minimize(loss)
    executor = paddle.static.Executor(paddle.CPUPlace())
    executor.run(startup)
    paddle.static.save(main_program, str(out / "static"))
    scope = paddle.static.global_scope()
    (out / "static.pdmodel").unlink()
    static = {v.name: np.array(scope.find_var(v.name).get_tensor()) for v in main_program.list_vars()
              if v.persistable and v.name not in ("feed", "fetch")}
    np.savez(out / "static.npz", **static)
    print(sorted(static))


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "tests/data/paddle/pickled"))
