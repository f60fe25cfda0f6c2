"""The pruned and distilled programs of tools/paddleslim_static.py (its configs convbn:prune:OPTIMIZER and
convbn:distill:OPTIMIZER): PaddleSlim's static Pruner on the conv net's forward (half the filters of its first
convolution, and what depends on them), or PaddleSlim's dist.merge of a teacher (the same net, its second
convolution twice as wide, in test mode) into the student's forward, with its soft_label, l2 and fsp losses added
to the student's; then Paddle's optimizer minimize of that program. Paddle 3.3.1 has neither paddle.fluid nor its
fsp op, which PaddleSlim's fsp calls (paddle.fluid.layers.fsp_matrix): fsp_matrix here stands in, x1 x2^T over the
spatial positions / H W, written with reshape and matmul, as the fsp op computed it.

Run as a script, it writes tests/data/paddle/quant_embedding: PaddleSlim's quant_embedding (abs_max and log) of a
small embedding + fc program, with its values and Paddle's output on a batch of ids:

    FLAGS_enable_pir_api=0 PYTHONPATH=PADDLESLIM_DIR:DEPS:tools /path/to/paddle/python tools/paddleslim_compress.py"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from paddleslim_static import _model, _optimizer, record


def compressed_step(out: Path, model: str, mode: str, optimizer: str) -> None:
    import paddle
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        x, label, loss, logits = _model(model)
    place, scope = paddle.CPUPlace(), paddle.static.global_scope()
    exe = paddle.static.Executor(place)
    exe.run(startup)
    if mode == "prune":
        from paddleslim.prune import Pruner
        main, _, _ = Pruner().prune(main, scope, params=["conv2d_0.w_0"], ratios=[0.5], place=place)
    else:
        loss = _distill(main, exe, loss, logits.name)
    forward, optimizer_startup = main.clone(), paddle.static.Program()
    with paddle.static.program_guard(main, optimizer_startup):
        _optimizer(optimizer).minimize(main.global_block().var(loss.name))
    exe.run(optimizer_startup)
    record(out, forward, main, main, loss.name, [x, label], optimizer)


def _distill(student, exe, student_loss, student_logits: str):
    """Merge the teacher into ``student`` and return the sum of the student's loss and the three distillation
    losses (PaddleSlim's, each a mean)."""
    import paddle
    from paddleslim.dist import fsp, l2, merge, soft_label
    paddle.fluid = SimpleNamespace(layers=SimpleNamespace(fsp_matrix=fsp_matrix))
    teacher, teacher_startup, teacher_scope = paddle.static.Program(), paddle.static.Program(), paddle.static.Scope()
    with paddle.static.program_guard(teacher, teacher_startup), paddle.utils.unique_name.guard():
        image = paddle.static.data("image", [-1, 3, 8, 8])
        conv = paddle.static.nn.conv2d(image, 4, 3, padding=1, bias_attr=False)   # FSP pairs equal channels
        relu = paddle.static.nn.batch_norm(conv, act="relu")
        pooled = paddle.static.nn.conv2d(paddle.nn.functional.max_pool2d(relu, 2), 8, 3, padding=1, act="relu")
        logits = paddle.static.nn.fc(paddle.nn.functional.avg_pool2d(pooled, 2), 5)
    with paddle.static.scope_guard(teacher_scope):
        exe.run(teacher_startup)
    teacher = teacher.clone(for_test=True)
    merge(teacher, student, {"image": "image"}, paddle.CPUPlace(), teacher_scope=teacher_scope)
    names = {op.type: op.output_arg_names[0] for op in reversed(student.global_block().ops)
             if not op.output_arg_names[0].startswith("teacher_")}   # the student's first conv's and relu's outputs
    with paddle.static.program_guard(student):
        losses = [fsp("teacher_" + conv.name, "teacher_" + relu.name, names["conv2d"], names["relu"], student),
                  l2("teacher_" + logits.name, student_logits, student),
                  soft_label("teacher_" + logits.name, student_logits, student)]
        return paddle.add_n([student_loss, *losses])


def fsp_matrix(x1, x2):
    """The FSP matrix of two [N, C, H, W] feature maps: [N, C1, C2], their channels' products averaged over H W."""
    import paddle
    n, c1, h, w = x1.shape
    flat1 = paddle.reshape(x1, [-1, c1, h * w])
    flat2 = paddle.reshape(x2, [-1, x2.shape[1], h * w])
    return paddle.scale(paddle.matmul(flat1, flat2, transpose_y=True), 1.0 / (h * w))


def quant_embedding_fixtures(out: Path) -> None:
    import numpy as np
    import paddle
    from paddleslim.quant import quant_embedding
    paddle.enable_static()
    paddle.seed(0)
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        ids = paddle.static.data("ids", [-1, 4], "int64")
        logits = paddle.static.nn.fc(paddle.mean(paddle.static.nn.embedding(ids, [20, 8]), axis=1), 3)
    exe, scope = paddle.static.Executor(paddle.CPUPlace()), paddle.static.global_scope()
    feed = {"ids": np.array([[1, 2, 3, 19], [0, 5, 5, 7]], "int64")}
    out.mkdir(parents=True, exist_ok=True)
    for kind in ("abs_max", "log"):
        paddle.seed(0)   # the same table each time: the pass replaces it in the scope
        exe.run(startup)
        config = {"quantize_op_types": ["lookup_table_v2"], "lookup_table_v2": {"quantize_type": kind}}
        program = quant_embedding(main.clone(for_test=True), paddle.CPUPlace(), config)
        (value,) = exe.run(program, feed=feed, fetch_list=[logits.name])
        (out / f"{kind}.pb").write_bytes(program.desc.serialize_to_string())
        params = {f"param:{v.name}": np.array(scope.find_var(v.name).get_tensor()) for v in program.list_vars()
                  if v.persistable and v.name not in ("feed", "fetch")}
        np.savez_compressed(out / f"{kind}.npz", **params, **{"feed:ids": feed["ids"], "out": value})


if __name__ == "__main__":
    quant_embedding_fixtures(Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "quant_embedding")
