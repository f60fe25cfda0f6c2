"""Legacy op types a Paddle 3.3.1 user writes from public Python APIs in legacy static mode (FLAGS_enable_pir_api=0)
on CPU that gradc did not know: py_func (paddle.static.py_func, with a backward function and skipped backward
inputs), read_file and decode_jpeg (paddle.vision.ops). Written to tests/data/paddle/user_api_ops/:

    py_func.pb.gz, py_func_paddle.pb.gz   the float64 forward, and Paddle's program after its append_backward
    py_func.npz                           feeds (x, w; c, which gets no gradient) and Paddle's loss and gradients
                                          (x@GRAD, w@GRAD)
    vision_read.pb.gz                     read_file -> decode_jpeg -> cast -> a linear layer -> mean (Paddle's CPU
                                          kernel of decode_jpeg refuses to run: "only supports GPU")
    <save|save_combine|load|load_combine>.pb.gz   the programs paddle.static.io.save_vars and load_vars build and run
                                          (a file per var, and one file), caught at Executor.run; paths under model/
    reader_train.pb.gz, reader_startup.pb.gz  a linear layer trained with SGD on batches from a DataLoader.
                                          from_generator(iterable=False) (create_py_reader, create_double_buffer_reader,
                                          read); reader.npz: the two batches, the initial parameters, Paddle's losses
                                          and parameters after the two steps

The functions py_func.pb calls live in Paddle's process; tests/test_user_api_ops.py registers the same four with
gradc, under Paddle's ids (creation order): tanh_forward 0, tanh_backward 1, product_forward 2, product_backward 3.

    data.pb.gz, data_paddle.pb.gz         a float64 two-layer net built with FLAGS_enable_pir_in_executor=1, which makes
                                          paddle.static.data write a data op (out: the fed var) in legacy mode, and
                                          Paddle's program after its append_backward; data.npz: x, the parameters,
                                          Paddle's loss and parameter gradients (its PIR executor's)
    pir/vision_read.json.gz               the same reader in PIR (pd_op.read_file, pd_op.decode_jpeg), by
                                          save_inference_model with an input x added to the fetched sum

    cd tools && FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python paddle_user_api_ops.py \
        ../tests/data/paddle/user_api_ops
"""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import paddle
from paddle_programs import gzip_file, pir_half, script_main, without_callstacks, write_gz

RNG = np.random.default_rng(23)


def tanh_forward(h):
    return np.tanh(np.asarray(h))


def tanh_backward(y, dy):   # h is skipped (backward_skip_vars): Paddle leaves it out of the arguments
    y = np.asarray(y)
    return np.asarray(dy) * (1 - y * y)


def product_forward(a, b, c):
    return np.asarray(a) * np.asarray(b) * np.asarray(c), np.asarray(a) + np.asarray(b)


def product_backward(a, b, c, prod, total, dprod, dtotal):   # c's grad is not wanted: Paddle drops it (@EMPTY@)
    a, b, c, dprod, dtotal = (np.asarray(v) for v in (a, b, c, dprod, dtotal))
    return dprod * b * c + dtotal, dprod * a * c + dtotal, dprod * a * b


def py_func_program(out: Path, exe) -> None:
    feed = {"x": RNG.normal(size=(3, 4)), "w": RNG.normal(size=(4, 2)), "c": RNG.normal(size=(3, 2))}
    main = paddle.static.Program()
    with paddle.static.program_guard(main, paddle.static.Program()):
        x, w, c = (paddle.static.data(name, value.shape, "float64") for name, value in feed.items())
        x.stop_gradient = w.stop_gradient = False
        h = paddle.matmul(x, w)
        block = main.global_block()
        y = block.create_var(name="tanh_out", shape=h.shape, dtype="float64")
        paddle.static.py_func(tanh_forward, h, y, backward_func=tanh_backward, skip_vars_in_backward_input=h)
        prod, total = (block.create_var(name=n, shape=h.shape, dtype="float64") for n in ("prod", "total"))
        paddle.static.py_func(product_forward, [y, h, c], [prod, total], backward_func=product_backward)
        loss = paddle.mean(paddle.multiply(prod, total))
        forward = main.clone()
        paddle.static.append_backward(loss)
    values = exe.run(main, feed=feed, fetch_list=[loss, "x@GRAD", "w@GRAD"])
    print("py_func", [op.type for op in main.global_block().ops])
    write_gz(out / "py_func.pb", without_callstacks(forward))
    write_gz(out / "py_func_paddle.pb", without_callstacks(main))
    np.savez(out / "py_func.npz", **feed, loss=values[0], **{"x@GRAD": values[1], "w@GRAD": values[2]})


def vision_read_program(out: Path) -> None:
    main = paddle.static.Program()
    with paddle.static.program_guard(main, paddle.static.Program()):
        image = paddle.vision.ops.decode_jpeg(paddle.vision.ops.read_file("photo.jpg"), mode="rgb")
        pixels = paddle.cast(image, "float32").reshape([1, -1]) / 255.0
        loss = paddle.mean(paddle.nn.Linear(48, 2)(pixels[:, :48]))
    print("vision_read", [op.type for op in main.global_block().ops])
    write_gz(out / "vision_read.pb", without_callstacks(main))
    del loss


def save_load_programs(out: Path) -> None:
    """The programs save_vars / load_vars run, each saved under the type of the ops it holds."""
    main_program, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main_program, startup):
        paddle.nn.Linear(3, 2)(paddle.static.data("x", [4, 3], "float32"))
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    caught, run = [], paddle.static.Executor.run
    paddle.static.Executor.run = lambda self, program=None, *args, **kwargs: (caught.append(program),
                                                                              run(self, program, *args, **kwargs))[1]
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as scratch:
        os.chdir(scratch)
        for io in (paddle.static.io.save_vars, paddle.static.io.load_vars):
            for filename in (None, "model.pdiparams"):
                io(exe, "model", main_program, filename=filename, predicate=lambda var: var.persistable)
        os.chdir(here)
    paddle.static.Executor.run = run
    for program in caught:
        kind = program.global_block().ops[0].type
        print(kind, [op.type for op in program.global_block().ops])
        write_gz(out / f"{kind}.pb", without_callstacks(program))


def reader_programs(out: Path) -> None:
    from paddle.base.reader import DataLoader
    paddle.seed(23)   # the startup's initial parameters
    main_program, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main_program, startup):
        x, y = paddle.static.data("x", [4, 3], "float32"), paddle.static.data("y", [4, 2], "float32")
        loader = DataLoader.from_generator(feed_list=[x, y], capacity=2, iterable=False)
        loss = paddle.mean(paddle.square(paddle.nn.Linear(3, 2)(x) - y))
        paddle.optimizer.SGD(0.1).minimize(loss)
    batches = [(RNG.normal(size=(4, 3)).astype("float32"), RNG.normal(size=(4, 2)).astype("float32"))
               for _ in range(2)]
    loader.set_batch_generator(lambda: iter(batches))
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    params = [param.name for param in main_program.all_parameters()]
    scope = paddle.static.global_scope()
    initial = {name: np.array(scope.find_var(name).get_tensor()) for name in params}
    loader.start()
    losses = [exe.run(main_program, fetch_list=[loss])[0] for _ in batches]
    loader.reset()
    print("reader", [op.type for op in main_program.global_block().ops])
    write_gz(out / "reader_train.pb", without_callstacks(main_program))
    write_gz(out / "reader_startup.pb", without_callstacks(startup))
    np.savez(out / "reader.npz", params=np.array(params), **{f"x{i}": bx for i, (bx, _) in enumerate(batches)},
             **{f"y{i}": by for i, (_, by) in enumerate(batches)}, **initial, losses=np.array(losses),
             **{f"{name}@after": np.array(scope.find_var(name).get_tensor()) for name in params})


def data_op_programs(out: Path) -> None:
    """In a second interpreter: FLAGS_enable_pir_in_executor is read when the executor starts."""
    import paddle_legacy_shim
    paddle_legacy_shim.install()
    paddle.enable_static()
    paddle.set_default_dtype("float64")
    paddle.seed(23)
    main_program, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main_program, startup):
        x = paddle.static.data("x", [4, 3], "float64")
        hidden = paddle.nn.functional.relu(paddle.nn.Linear(3, 5)(x))
        loss = paddle.mean(paddle.square(paddle.nn.Linear(5, 2)(hidden)))
        forward = main_program.clone()
        grads = paddle.static.append_backward(loss)
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    feed = {"x": RNG.normal(size=(4, 3))}
    scope = paddle.static.global_scope()
    params = {param.name: np.array(scope.find_var(param.name).get_tensor()) for param, _ in grads}
    values = exe.run(main_program, feed=feed, fetch_list=[loss, *(grad for _, grad in grads)])
    print("data", [op.type for op in main_program.global_block().ops])
    write_gz(out / "data.pb", without_callstacks(forward))
    write_gz(out / "data_paddle.pb", without_callstacks(main_program))
    np.savez(out / "data.npz", **feed, **params, loss=values[0],
             **{grad.name: value for (_, grad), value in zip(grads, values[1:])})


def main_pir(out: Path) -> None:
    paddle.enable_static()
    main_program = paddle.static.Program()
    with paddle.static.program_guard(main_program, paddle.static.Program()):
        x = paddle.static.data("x", [2], "float32")
        image = paddle.vision.ops.decode_jpeg(paddle.vision.ops.read_file("photo.jpg"), mode="rgb")
        total = paddle.sum(paddle.cast(image, "float32")) + paddle.sum(x)
    (out / "pir").mkdir(exist_ok=True)
    exe = paddle.static.Executor(paddle.CPUPlace())
    paddle.static.save_inference_model(str(out / "pir" / "vision_read"), [x], [total], exe, program=main_program)
    (out / "pir" / "vision_read.pdiparams").unlink(missing_ok=True)
    program = out / "pir" / "vision_read.json"
    gzip_file(program)
    print("vision_read (PIR)", [op.name() for op in main_program.global_block().ops])


def main(out: Path) -> None:
    import paddle_legacy_shim
    paddle_legacy_shim.install()
    paddle.enable_static()
    py_func_program(out, paddle.static.Executor(paddle.CPUPlace()))
    vision_read_program(out)
    save_load_programs(out)
    reader_programs(out)
    pir_half(__file__, out)
    subprocess.run([sys.executable, __file__, str(out), "--data-op"], check=True,
                   env={**os.environ, "FLAGS_enable_pir_in_executor": "1"})


if __name__ == "__main__":
    if sys.argv[2:] == ["--data-op"]:
        data_op_programs(Path(sys.argv[1]))
    else:
        script_main(main, main_pir)
