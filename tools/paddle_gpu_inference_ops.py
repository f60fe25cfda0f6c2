"""Fixtures for the fused ops Paddle Inference's GPU passes and BuildStrategy's training fusions write
(tests/data/paddle/gpu_inference/<case>): each case writes the legacy op straight into a ProgramDesc with its OpProto's
slots and attributes, saves it (program.pdmodel) and Paddle's translation of it to PIR (program.json, through
paddle_gpu_only_translated.translated_program), and records the feeds and the expected outputs:

- where Paddle 3.3.1's CPU build has the op's kernel (fused_elemwise_*activation and their grad ops,
  fusion_squared_mat_sub, fusion_seqpool_concat, self_dp_attention), Paddle's own run of the written program;
- otherwise (the GPU-only transformer and conv fusions), Paddle's CPU run, in float64, of the unfused layers the
  pass replaces (the pass's pattern defines the op's math).

The cases are tools/paddle_gpu_inference_cases.py's, then the second round's (tools/paddle_gpu_pass_cases.py and
paddle_gpu_resnet_cases.py: qkv_unpack_mha, fused_token_prune, the cuDNN and ResNet fusions, yolo_box_post,
squeeze_excitation_block, float32 and float64); a case may ``derive`` feeds from others (a batch's statistics).

Not part of the package: it needs paddlepaddle.

    FLAGS_enable_pir_api=0 PYTHONPATH=tools /work/paddle-venv/bin/python tools/paddle_gpu_inference_ops.py [case ...]
"""

from __future__ import annotations

import json
import shutil
import sys
import warnings
from pathlib import Path

import numpy as np
import paddle
from paddle.base import core
from paddle_gpu_inference_cases import CASES
from paddle_gpu_only_translated import PIR_RESULT_NAMES, translated_program
from paddle_gpu_pass_cases import GPU_PASS_CASES

CASES = CASES | GPU_PASS_CASES   # the second round's cases after the first's: their seeds stay
PIR_RESULT_NAMES |= {"CLSInds": "cls_inds", "Y": "out", "Y@GRAD": "out_grad", "Conv2Input": "conv2_input"} | {
    f"{stat}{b}Out": f"{stat.lower()}{b}_out" for stat in ("Mean", "Var") for b in "123"}   # the resnet fusions'


OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "gpu_inference"


def legacy_program(spec: dict):
    """The spec's ops written into a legacy ProgramDesc; returns it and the names of the outputs to fetch."""
    main = paddle.static.Program()
    block = main.global_block()
    with paddle.static.program_guard(main, paddle.static.Program()):
        for name, (shape, dtype, *lod) in spec["feeds"].items():
            paddle.static.data(name, shape, dtype, lod_level=1 if lod else 0)
    fetches = []
    for op_type, ins, outs, attrs in spec["ops"]:
        desc = block.desc.append_op()
        desc.set_type(op_type)
        for slot, names in ins.items():
            desc.set_input(slot, names)
        for slot, out in outs.items():   # a list slot writes several vars, each (name, shape[, dtype])
            for name, shape, *dtype in out if isinstance(out, list) else [out]:
                block.create_var(name=name, shape=shape, dtype=dtype[0] if dtype else "float32")
                fetches.append(name)
            desc.set_output(slot, [var[0] for var in out] if isinstance(out, list) else [out[0]])
        for name, value in attrs.items():   # (setter, value): a type the op's proto cannot tell (a grad op's bool)
            getattr(desc, value[0])(name, value[1]) if isinstance(value, tuple) else desc._set_attr(name, value)
    main._sync_with_cpp()
    return main, [name for name in fetches if name not in spec.get("unfetched", ())]


def _feed(rng, name, shape, dtype, *lod):
    if dtype == "int64":
        return rng.integers(0, 4, shape).astype(np.int64)
    return rng.standard_normal(shape).astype(dtype)


def _paddle_run(main, feed: dict, spec: dict, fetches: list[str]) -> dict:
    """Paddle's CPU executor on the written program; a feed with a LoD goes in as a LoDTensor."""
    exe = paddle.static.Executor(paddle.CPUPlace())
    tensors = {}
    for name, value in feed.items():
        tensor = core.DenseTensor()
        tensor.set(value, paddle.CPUPlace())
        if len(spec["feeds"][name]) > 2:
            tensor.set_recursive_sequence_lengths([np.diff(spec["feeds"][name][2]).tolist()])
        tensors[name] = tensor
    outs = exe.run(main, feed=tensors, fetch_list=fetches, return_numpy=False)
    return {name: np.array(out) for name, out in zip(fetches, outs)}


def _rounded(value, spec: dict):
    """A float reference value in the feeds' dtype (float32 unless the spec says), an integer one as it is."""
    return value.astype(spec.get("dtype", "float32")) if value.dtype.kind == "f" else value


def write(case: str, seed: int) -> str:
    spec = CASES[case]
    main, fetches = legacy_program(spec)
    directory = OUT / case
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    (directory / "program.pdmodel").write_bytes(main.desc.serialize_to_string())
    unfetched = spec.get("unfetched", ())   # given to the translation as a list: declared, not fetched
    ops = [(op, ins, {slot: [out] if not isinstance(out, list) and out[0] in unfetched else out
                      for slot, out in outs.items()}, attrs) for op, ins, outs, attrs in spec["ops"]]
    pir, pir_fetches = translated_program({"feeds": {n: f[:2] for n, f in spec["feeds"].items()}, "ops": ops})
    core.serialize_pir_program(pir, str(directory / "program.json"), True, False, True)
    rng = np.random.default_rng(seed)
    feed = {name: spec.get("draw", _feed)(rng, name, *f) for name, f in spec["feeds"].items()}
    feed |= spec.get("derive", dict)(feed)   # feeds that must agree with others (a batch's statistics)
    np.savez_compressed(directory / "feed.npz", **feed, **{f"{n}.lod": np.array(f[2]) for n, f in
                                                           spec["feeds"].items() if len(f) > 2})
    if "reference" in spec:   # no CPU kernel: Paddle's CPU run of the unfused layers, float64
        with paddle.base.dygraph.guard(paddle.CPUPlace()):
            wide = {n: paddle.to_tensor(v.astype(np.float64) if v.dtype == np.float32 else v) for n, v in feed.items()}
            expected = {n: _rounded(v.numpy(), spec) for n, v in spec["reference"](wide).items()}
        made_by = "Paddle's CPU run of the unfused layers (float64)"
    else:
        expected = _paddle_run(main, feed, spec, fetches)
        made_by = "Paddle's CPU kernel running the written program"
    np.savez_compressed(directory / "expected.npz", **expected)
    meta = {"case": case, "paddle_version": paddle.__version__, "legacy_ops": [op[0] for op in spec["ops"]],
            "pir_ops": sorted({op.name() for op in pir.global_block().ops} - {"pd_op.fetch", "pd_op.data"}),
            "expected_by": made_by, "fetches": sorted(expected),
            "pir_fetches": [n for n in pir_fetches if n in expected]}   # the translation fetches no list output
    (directory / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return f"{meta['pir_ops']} {made_by}"


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    paddle.enable_static()
    for index, case in enumerate(CASES):   # the cases named on the command line, or all; seed 500 + place in list
        if sys.argv[1:] and case not in sys.argv[1:]:
            continue
        print(f"{case}: {write(case, 500 + index)}")
    sys.exit(0)
