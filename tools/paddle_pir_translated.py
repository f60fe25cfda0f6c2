"""PIR fixtures of legacy programs as Paddle 3.3.1's own legacy-to-PIR translator writes them
(`paddle.base.libpaddle.pir.translate_to_pir`, how Paddle 3 loads an old .pdmodel in its default PIR mode), into
tests/data/paddle/pir/translated_<case>/: forward.json (the loss fetched as "loss"), and, when the translator
accepts the legacy fixture's training program (backward.pb, with fluid's grad ops), backward.json.gz fetching the
loss and every gradient of grads.npz; with the legacy fixture's feed, parameters, loss and gradients, its LoD
offsets (meta.json "lods") and the PIR op names. Paddle runs both translations first and must give the legacy
fixture's loss and gradients; where Paddle 3.3.1 cannot run its own translation (meta.json "paddle_run_errors"),
the numbers are those of its legacy run of the same program. Not part of the package: gradc does not need Paddle.

    /path/to/paddle/python tools/paddle_pir_translated.py tests/data/paddle/pir [case ...]
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import paddle
from paddle.base import core
from paddle_programs import write_pir_gz

LOSS_NAME = "loss"
# case -> its legacy fixture under tests/data/paddle; True: also the translated training program
TRANSLATED = {
    "translated_cond": ("cond", False),
    "translated_while_loop": ("while_loop", False),
    # LoD sequences
    "translated_lod_reset_target": ("layers/lod_reset_target", True),
    "translated_lod_reset_y_offsets": ("layers/lod_reset_y_offsets", True),
    "translated_sequence_conv": ("layers/sequence_conv", True),
    "translated_sequence_expand": ("layers/sequence_expand", True),
    "translated_sequence_softmax": ("layers/sequence_softmax", True),
    "translated_im2sequence": ("layers/im2sequence", True),
    "translated_dynamic_lstm": ("layers/dynamic_lstm", True),
    "translated_dynamic_gru": ("layers/dynamic_gru", True),
    "translated_gru_unit": ("layers/gru_unit", True),
    # metrics and decoding
    "translated_chunk_eval_iob": ("layers/chunk_eval_iob", True),
    "translated_crf_decoding_padded": ("layers/crf_decoding_padded", True),
    "translated_ctc_align_lod": ("layers/ctc_align_lod", True),
    "translated_edit_distance_padded": ("layers/edit_distance_padded", True),
    "translated_beam_search_log_probs": ("layers/beam_search_log_probs", True),
    # fluid 1.x losses, shapes, constants and fc (box_coder's prior box variances are an assign_value)
    "translated_box_coder_decode": ("layers/box_coder_decode", True),
    "translated_hinge_loss": ("layers/hinge_loss", True),
    "translated_l1_norm": ("layers/l1_norm", True),
    "translated_reshape_v1_tensor": ("layers/reshape_v1_tensor", True),
    "translated_fill_constant_batch_size_like_v1": ("layers/fill_constant_batch_size_like_v1", True),
    "translated_fc_plain": ("layers/fc_plain", False),   # legacy fc has no grad: its training program has none
    # quantizers in place (moving_average_abs_max_scale's backward.pb: the translator fails on it)
    "translated_fake_quant_moving_average": ("layers/fake_quant_moving_average", True),
    "translated_moving_average_abs_max_scale": ("layers/moving_average_abs_max_scale", False),
}


def op_names(program) -> list[str]:
    """Every op name of the program, nested regions included, sorted and unique."""
    names, stack = set(), [program.global_block()]
    while stack:
        for op in stack.pop().ops:
            names.add(op.name())
            stack.extend(op.blocks())
    return sorted(names)


def reduce_all_as_axes(desc) -> None:
    """Paddle 3.3.1's translator drops a legacy reduce's reduce_all (it writes the reduce over ``dim``, [0] by default,
    typed with the scalar the legacy var declares): spell reduce_all as every axis first, which it keeps."""
    block = desc.block(0)
    for op in (block.op(i) for i in range(block.op_size())):
        if op.type().startswith("reduce_") and op.has_attr("reduce_all") and op.attr("reduce_all"):
            rank = len(block.find_var(op.input("X")[0].encode()).shape())
            op._set_int32s_attr("dim", list(range(rank)))


def translate(path: Path):
    """The translated program and its map from legacy var names to PIR values."""
    desc = core.ProgramDesc(path.read_bytes())
    reduce_all_as_axes(desc)
    # translate_to_pir (what Paddle's loaders call) makes the translator write legacy fc as onednn_op.fc from then on,
    # as a loaded old model holds it; translate_to_pir_with_param_map alone writes pd_op.fc
    paddle.base.libpaddle.pir.translate_to_pir(desc)
    program, values = paddle.base.libpaddle.pir.translate_to_pir_with_param_map(desc)
    return program, {name: value[-1] if isinstance(value, list) else value for name, value in values.items()}


def lod_feed(legacy: Path, meta: dict) -> dict:
    """The legacy fixture's inputs, a LoD input (meta.json "lods") as a DenseTensor carrying its offsets."""
    feed = {}
    with np.load(legacy / "feed.npz") as archive:
        for name in archive.files:
            if name in meta.get("lods", {}):
                tensor = core.DenseTensor()
                tensor.set(archive[name], paddle.CPUPlace())
                tensor.set_lod(meta["lods"][name])
                feed[name] = tensor
            else:
                feed[name] = archive[name]
    return feed


def run(program, legacy: Path, meta: dict, fetches: list) -> list[np.ndarray] | str:
    """Paddle's values of ``fetches``, or the first line of the error with which Paddle fails to run the program."""
    try:
        return run_with_inputs(program, legacy, meta, fetches)
    except ValueError as error:
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        return next((line for line in lines if "Error" in line), lines[0])


def run_with_inputs(program, legacy: Path, meta: dict, fetches: list) -> list[np.ndarray]:
    """Paddle's values of ``fetches`` with the inputs and parameters of the fixture directory ``legacy``."""
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        if (legacy / "params.npz").exists():
            with np.load(legacy / "params.npz") as params:
                for name in params.files:
                    scope.var(name).get_tensor().set(params[name], paddle.CPUPlace())
        # a fetched LoD tensor (a sequence input's gradient) does not convert to numpy by itself
        values = paddle.static.Executor(paddle.CPUPlace()).run(program, feed=lod_feed(legacy, meta), fetch_list=fetches,
                                                                return_numpy=False)
    return [np.array(value) for value in values]


def forward(legacy: Path, meta: dict, out: Path, errors: dict) -> list[str]:
    """forward.json: the translated forward program, the loss fetched as "loss"."""
    program, values = translate(legacy / "forward.pb")
    loss = values[meta["loss"]]
    with paddle.static.program_guard(program):
        paddle._pir_ops.fetch(loss, LOSS_NAME, 0).persistable = True
    core.serialize_pir_program(program, str(out / "forward.json"), True, False, True)
    values = run(program, legacy, meta, [loss])
    if isinstance(values, str):
        errors["forward"] = values
    else:
        assert np.allclose(values[0], np.load(legacy / "loss.npy"), rtol=1e-6), "the translation computes another loss"
    return op_names(program)


def backward(legacy: Path, meta: dict, out: Path, errors: dict) -> list[str]:
    """backward.json.gz: the translated training program, fetching the loss and the gradients of grads.npz."""
    program, values = translate(legacy / "backward.pb")
    with np.load(legacy / "grads.npz") as archive:
        grads = {name: archive[name] for name in archive.files}
    fetched = [(LOSS_NAME, values[meta["loss"]]), *((name, values[name]) for name in grads)]
    with paddle.static.program_guard(program):
        for col, (name, value) in enumerate(fetched):
            paddle._pir_ops.fetch(value, name, col).persistable = True
    write_pir_gz(program, out / "backward.json")
    values = run(program, legacy, meta, [value for _, value in fetched])
    if isinstance(values, str):
        errors["backward"] = values
        return op_names(program)
    loss, *computed = values
    assert np.allclose(loss, np.load(legacy / "loss.npy"), rtol=1e-6), "the training translation computes another loss"
    for (name, expected), value in zip(grads.items(), computed):
        assert np.allclose(value, expected, rtol=1e-5, atol=1e-6), f"the training translation computes another {name}"
    return op_names(program)


def build_translated(case: str, out_dir: Path) -> None:
    """A legacy fixture through Paddle's translator, with the legacy fixture's inputs, parameters and numbers."""
    paddle.enable_static()
    source, with_backward = TRANSLATED[case]
    legacy = out_dir.parent / source
    meta = json.loads((legacy / "meta.json").read_text())
    out = out_dir / case
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    errors = {}
    ops = forward(legacy, meta, out, errors)
    backward_ops = backward(legacy, meta, out, errors) if with_backward else []
    for name in ("feed.npz", "params.npz", "grads.npz", "loss.npy"):
        if (legacy / name).exists():
            shutil.copy(legacy / name, out / name)
    lods = {"lods": meta["lods"]} if meta.get("lods") else {}
    description = {"case": case, "paddle_version": paddle.__version__, "loss": LOSS_NAME, **lods,
                   "description": f"tests/data/paddle/{source}/forward.pb"
                                  f"{' and backward.pb' if with_backward else ''} through paddle's translate_to_pir",
                   "params_grads": [[name[:-5], name] for name in np.load(legacy / "grads.npz").files],
                   "pir_ops": ops, "pir_backward_ops": backward_ops}
    if errors:
        description["paddle_run_errors"] = errors
    (out / "meta.json").write_text(json.dumps(description, indent=1) + "\n")
    print(f"{case}: ops {ops}; backward {backward_ops}; Paddle cannot run it: {errors}")


def build_sparse_rows(out: Path) -> None:
    """pd_op.embedding_sparse_grad, merge_selected_rows and get_tensor_from_selected_rows, which no legacy fixture
    holds (Paddle 3.3.1 appends no sparse grad to a legacy program): a legacy program of the three made op by op,
    translated, with its input and Paddle's run of the dense rows (out/program.json, feed.npz, expected.npy)."""
    paddle.enable_static()
    rows = core.VarDesc.VarType.SELECTED_ROWS
    with paddle.pir_utils.OldIrGuard():
        main = paddle.static.Program()
        with paddle.static.program_guard(main, paddle.static.Program()):
            block = main.global_block()
            for name, shape, dtype in (("ids", [4], "int64"), ("out_grad", [4, 3], "float32"),
                                       ("w", [10, 3], "float32")):
                paddle.static.data(name, shape, dtype)
            for name, kind in (("w@GRAD", rows), ("merged", rows), ("dense", core.VarDesc.VarType.DENSE_TENSOR)):
                block.create_var(name=name, type=kind, dtype="float32", shape=[10, 3])
            for type, source, target in (("lookup_table_v2_grad", None, "w@GRAD"),
                                         ("merge_selected_rows", "w@GRAD", "merged"),
                                         ("get_tensor_from_selected_rows", "merged", "dense")):
                op = block.desc.append_op()   # the desc: grad ops have no Python op proto to append with
                op.set_type(type)
                for slot, names in ({"Ids": ["ids"], "W": ["w"], "Out@GRAD": ["out_grad"]} if source is None
                                    else {"X": [source]}).items():
                    op.set_input(slot, names)
                op.set_output("W@GRAD" if source is None else "Out", [target])
                if source is None:
                    op._set_bool_attr("is_sparse", True)
                    op._set_int64_attr("padding_idx", -1)
        desc = core.ProgramDesc(main.desc.serialize_to_string())
    program = paddle.base.libpaddle.pir.translate_to_pir(desc)
    dense = next(op for op in program.global_block().ops if op.name() == "pd_op.get_tensor_from_selected_rows")
    feed = {"ids": np.array([1, 3, 1, 7]), "out_grad": np.arange(12, dtype="float32").reshape(4, 3),
            "w": np.ones((10, 3), "float32")}
    out.mkdir(parents=True, exist_ok=True)
    core.serialize_pir_program(program, str(out / "program.json"), True, False, True)
    with paddle.static.scope_guard(paddle.static.Scope()):
        (value,) = paddle.static.Executor(paddle.CPUPlace()).run(program, feed=feed, fetch_list=[dense.result(0)])
    np.savez_compressed(out / "feed.npz", **feed)
    np.save(out / "expected.npy", value)
    print(f"{out.name}: the merged rows {value.tolist()}")


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/data/paddle/pir")
    for name in sys.argv[2:] or [*TRANSLATED, "sparse_rows"]:
        with paddle.utils.unique_name.guard():
            if name == "sparse_rows":
                build_sparse_rows(target.parent / "pir_translated_sparse_rows")
            else:
                build_translated(name, target)
