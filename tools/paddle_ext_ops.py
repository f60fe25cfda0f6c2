"""Fixtures of the custom C++ ops of Paddle's model suites (gradc.ops.ms_deform_attn, ...), built and run by
PaddlePaddle 3.3.1 on the CPU, into tests/data/paddle/ext_ops/<case>/:

- legacy (FLAGS_enable_pir_api=0): forward.pb, the program as Paddle saves it (the suite's op under its own type,
  slots and attributes); backward.pb after Paddle's append_backward; feed.npz (inputs and parameters), and
  Paddle's loss and gradients: grads.npz ({"loss": ..., "<var>@GRAD": ...});
- PIR: model.json (save_inference_model: custom_op.<name>) with expected.npz, Paddle's outputs on feed.npz; and
  backward.json, Paddle's PIR training program with the custom_op.<name>_grad ops, fetching the same gradients.

Most of the suites' ops ship CUDA kernels only (Paddle3D's and PaddleDetection's ms_deform_attn, the pointnet2 ops,
...), which need a GPU this machine has not: tools/ext_ops_cpu/*.cc are CPU kernels of the same op definitions
(PD_BUILD_OP names, slots, attributes and grad ops), written from the suites' formulas, built here with
paddle.utils.cpp_extension.load (g++). meta.json records the loss, the gradients' and the checked integer results'
names (a sampler's indices, the voxels) and Paddle's legacy op list.
Not part of the package: gradc does not need Paddle.

    /path/to/paddle/python tools/paddle_ext_ops.py tests/data/paddle/ext_ops PADDLE3D_DIR PADDLEDET_DIR BUILD_DIR

PADDLE3D_DIR: a Paddle3D checkout (develop, 3259dab), whose hard_voxelize and assign_score_withk have CPU kernels;
PADDLEDET_DIR: a PaddleDetection checkout (develop, 666f597), whose rbox_iou, matched_rbox_iou and nms_rotated have
CPU kernels: those sources are built as they are.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from paddle_ext_ops_cases import CASES

SOURCES = sorted(str(p) for p in (Path(__file__).parent / "ext_ops_cpu").glob("*.cc"))


# the suites' own C++ sources with a CPU kernel, built as they are from checkouts of the suites
PADDLE3D_SOURCES = ["paddle3d/ops/voxel/voxelize_op.cc", "paddle3d/ops/assign_score_withk/assign_score_withk_cuda.cc"]
PADDLEDET_SOURCES = ["ppdet/ext_op/csrc/rbox_iou/rbox_iou.cc", "ppdet/ext_op/csrc/matched_rbox_iou/matched_rbox_iou.cc",
                     "ppdet/ext_op/csrc/nms_rotated/nms_rotated.cc"]


def _load_ops(build: Path, paddle3d: Path, paddledet: Path):
    from paddle.utils.cpp_extension import load
    build.mkdir(parents=True, exist_ok=True)
    sources = (SOURCES + [str(paddle3d / source) for source in PADDLE3D_SOURCES]
               + [str(paddledet / source) for source in PADDLEDET_SOURCES])
    return load(name="gradc_suite_ext_ops", sources=sources, build_directory=str(build), verbose=False,
                extra_include_paths=[str(paddledet / "ppdet/ext_op/csrc/rbox_iou")])


def _parameters(main) -> list:
    return sorted(main.global_block().all_parameters(), key=lambda p: p.name)


def build(out_dir: Path, build_dir: Path, suites: tuple[Path, Path], mode: str) -> None:
    os.environ["FLAGS_enable_pir_api"] = "1" if mode == "pir" else "0"
    import paddle
    if mode == "legacy":
        import paddle_legacy_shim  # paddle.sum and softmax append legacy ops again
        paddle_legacy_shim.install()
    ops = _load_ops(build_dir, *suites)
    paddle.enable_static()
    for case, builder in CASES.items():
        paddle.seed(7)
        out = out_dir / case
        out.mkdir(parents=True, exist_ok=True)
        main, startup = paddle.static.Program(), paddle.static.Program()
        feed = {}
        with paddle.static.program_guard(main, startup):
            output, loss, wrt, extras = builder(paddle, ops, feed, np.random.default_rng(11), mode == "legacy")
            forward = main.clone() if mode == "legacy" else None
            targets = wrt + _parameters(main)
            grads = (paddle.static.gradients([loss], targets) if mode == "pir" else
                     [g for _, g in paddle.static.append_backward(loss, parameter_list=_parameters(main))])
            if mode == "legacy":
                grads = [main.global_block().var(v.name + "@GRAD") for v in wrt] + grads
        executor = paddle.static.Executor(paddle.CPUPlace())
        executor.run(startup)
        scope = paddle.static.global_scope()
        if mode == "pir":   # the legacy run's parameters (written first), so both runs compute the same numbers
            with np.load(out / "feed.npz") as saved:
                for p in _parameters(main):
                    scope.find_var(p.name).get_tensor().set(saved[p.name], paddle.CPUPlace())
        params = {p.name: np.array(scope.find_var(p.name).get_tensor()) for p in _parameters(main)}
        names = [v.name for v in targets]
        fetched = executor.run(main, feed=feed, fetch_list=[loss, output, *grads, *extras.values()])
        extra_values = dict(zip(extras, fetched[len(fetched) - len(extras):]))
        fetched = fetched[:len(fetched) - len(extras)]
        if mode == "legacy":
            (out / "forward.pb").write_bytes(forward.desc.serialize_to_string())
            (out / "backward.pb").write_bytes(main.desc.serialize_to_string())
            np.savez(out / "feed.npz", **feed, **params)
            np.savez(out / "grads.npz", loss=fetched[0], out=fetched[1], **extra_values,
                     **{f"{n}@GRAD": g for n, g in zip(names, fetched[2:])})
            meta = {"loss": loss.name, "out": output.name, "wrt": names,
                    "extras": {key: var.name for key, var in extras.items()},
                    "ops": [op.type for op in main.block(0).ops]}
            (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
        else:
            _save_pir(paddle, out, main, feed, output, executor, fetched, names, grads, loss)


def _save_pir(paddle, out: Path, main, feed, output, executor, fetched, names, grads, loss) -> None:
    from paddle_programs import with_fetches
    feeds = [v for v in _data_values(main) if v.name in _inputs_of(output)]
    paddle.static.save_inference_model(str(out / "model"), feeds, [output], executor, program=main)
    np.savez(out / "expected.npz", out=fetched[1], pir_loss=fetched[0],
             **{f"pir:{n}@GRAD": g for n, g in zip(names, fetched[2:])})
    fetches = [("loss", loss), *((f"{name}@GRAD", grad) for name, grad in zip(names, grads))]
    (out / "backward.json").write_bytes(with_fetches(main, fetches))


def _inputs_of(value) -> set[str]:
    """The names of the data ops the PIR value is computed from (the inference model's feeds)."""
    names, stack, seen = set(), [value.get_defining_op()], set()
    while stack:
        op = stack.pop()
        if op is None or id(op) in seen:
            continue
        seen.add(id(op))
        if op.name() == "pd_op.data":
            names.add(op.attrs()["name"])
        stack.extend(operand.get_defining_op() for operand in op.operands_source())
    return names


def _data_values(main):
    return [op.result(0) for op in main.global_block().ops if op.name() == "pd_op.data"]


def main() -> None:
    out_dir, paddle3d, paddledet, build_dir = (Path(arg) for arg in sys.argv[1:5])
    if len(sys.argv) > 5:   # one mode, in a process of its own (the PIR flag is read at import)
        build(out_dir, build_dir, (paddle3d, paddledet), sys.argv[5])
        return
    for mode in ("legacy", "pir"):
        subprocess.run([sys.executable, __file__, *sys.argv[1:5], mode], check=True)


if __name__ == "__main__":
    main()
