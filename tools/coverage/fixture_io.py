"""Write a row's fixture directory (the layout of tools/paddle_fixtures.py's `build`):

    forward.pb  backward.pb  feed.npz  params.npz (if any)  grads.npz  loss.npy  meta.json (with "lods": the
                            offsets of each LoD input, {name: [[0, 2, 5]]})
    random.npz              outputs of random ops (dropout masks), which gradc replays
A row too big for numbers (a full-size model) keeps forward.pb and meta.json only.
    grads64.npz loss64.npy  Paddle's float64 run, where float32 rounding exceeds rtol 1e-5 / atol 1e-6
    grads_reference.npz     where Paddle's gradient is wrong (known_issues.py): central differences in float64
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import paddle

from .paddle_run import Built


def serialize(program: paddle.static.Program) -> bytes:
    """The program without its ops' runtime extras, as Paddle's own saving clips them
    (Program._remove_training_info(clip_extra=True): op_callstack, with_quant_attr and each op's
    extra attrs such as use_mkldnn), but keeping the vars' is_parameter and stop_gradient flags."""
    program = paddle.static.Program.parse_from_string(program.desc.serialize_to_string())
    for block in program.blocks:
        for op in block.ops:
            for name in ["op_callstack", "with_quant_attr", *paddle.base.core.get_op_extra_attrs(op.type)]:
                op.desc.remove_attr(name)
    return program.desc.serialize_to_string()


def fresh_dir(path: Path) -> Path:
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


def write_failure(path: Path, meta: dict) -> None:
    (fresh_dir(path) / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


def write_program_only(path: Path, built: Built, meta: dict) -> None:
    """A row too big for numbers: its forward program and Paddle's op lists and parameter gradients."""
    out = fresh_dir(path)
    (out / "forward.pb").write_bytes(serialize(built.forward))
    write_meta(out, built, {**meta, "program_only": True})


def write_fixture(path: Path, built: Built, feed: dict, values, meta: dict, float64=None, reference=None) -> None:
    out = fresh_dir(path)
    (out / "forward.pb").write_bytes(serialize(built.forward))
    (out / "backward.pb").write_bytes(serialize(built.main))
    np.savez_compressed(out / "feed.npz", **feed)
    if values.params:  # a row without parameters has no params.npz
        np.savez_compressed(out / "params.npz", **values.params)
    np.savez_compressed(out / "grads.npz", **values.grads)
    np.save(out / "loss.npy", values.loss)
    if values.random:
        np.savez_compressed(out / "random.npz", **values.random)
    if float64 is not None:
        np.savez_compressed(out / "grads64.npz", **float64.grads)
        np.save(out / "loss64.npy", float64.loss)
    if reference:
        np.savez_compressed(out / "grads_reference.npz", **reference)
    write_meta(out, built, meta)


def write_meta(out: Path, built: Built, meta: dict) -> None:
    lods = {"lods": built.lods} if built.lods else {}   # the LoD inputs' offsets, which feed.npz cannot hold
    meta = {**meta, "paddle_version": paddle.__version__, "loss": built.loss, **lods,
            "params_grads": [list(pair) for pair in built.params_grads], "input_grads": built.input_grads,
            "random_outputs": built.random_outputs, "ops_forward": sorted(set(built.forward_ops)),
            "ops_backward": sorted(set(built.backward_ops))}
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
