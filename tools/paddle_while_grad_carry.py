"""Whether Paddle 3.3.1's while_grad carries a loop var's gradient to the step before when the var's X@GRAD is
@EMPTY@ (its first value wants no gradient: a cache that starts as a constant). Two steps, one per interpreter:

    PYTHONPATH=src .venv/bin/python tools/paddle_while_grad_carry.py gradc DIR
    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_while_grad_carry.py paddle DIR

The gradc step writes BEAM's legacy training program (tests/data/paddle/generation/BEAM-legacy, loss the summed beam
scores, every float parameter differentiated) and gradc's gradients. The Paddle step runs it, then builds the
pattern in miniature with Paddle's own layers and append_backward (a while whose cache, a constant with no rows,
grows by a concatenated row per step and is read by gather) and runs that; each program as written and with every
loop var's X@GRAD named after its Out@GRAD, and prints how far each run is from gradc's gradients.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

BEAM = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "generation" / "BEAM-legacy"


def gradc_step(out: Path) -> None:
    import gradc
    from gradc.io.pdiparams import read_params
    program = gradc.load(BEAM / "inference.pdmodel")
    params = read_params(BEAM / "inference.pdiparams", program)
    block = program.global_block
    scores = [op.input("X")[0] for op in block.ops if op.type == "fetch"][1]
    block.create_var("loss", [], block.var(scores).dtype)
    block.append_op("reduce_sum", {"X": [scores]}, {"Out": ["loss"]}, {"reduce_all": True})
    pairs = gradc.append_backward(program, "loss", parameter_list=list(params))
    scope = gradc.Scope()
    for name, value in params.items():
        scope[name] = value
    names = [grad for _, grad in pairs]
    values = gradc.Executor().run(program, dict(np.load(BEAM / "feed_beam.npz")), names, scope)
    np.savez(out / "beam_grads.npz", **dict(zip(names, values)))
    np.savez(out / "beam_params.npz", **params)
    gradc.save(program, out / "beam_train.pb")


def _named_carried_grads(program) -> list[str]:
    """Name each while_grad's @EMPTY@ X@GRAD of a loop var whose Out@GRAD it reads; returns the vars renamed."""
    named = []
    for op in (op for block in program.blocks for op in block.ops if op.type == "while_grad"):
        given, grads = set(op.input("Out@GRAD")), op.output("X@GRAD")
        new = [x + "@GRAD" if g == "@EMPTY@" and x + "@GRAD" in given else g for x, g in zip(op.input("X"), grads)]
        named += [x for x, g, n in zip(op.input("X"), grads, new) if g != n]
        op.desc.set_output("X@GRAD", new)
    return named


def _run(paddle, program, params: dict, feed: dict, fetches: list[str]) -> list[np.ndarray] | str:
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        for name, value in params.items():
            scope.var(name).get_tensor().set(value, paddle.CPUPlace())
        try:
            return paddle.static.Executor(paddle.CPUPlace()).run(program, feed=feed, fetch_list=fetches)
        except Exception as error:  # noqa: BLE001 - the failure is the result
            return " ".join(line.strip() for line in str(error).splitlines() if "InvalidArgument)" in line
                            or "operator <" in line)


def _report(paddle, label: str, load, params: dict, feed: dict, ours: dict) -> None:
    for variant in ("as written", "X@GRAD named"):
        program = load()
        named = _named_carried_grads(program) if variant == "X@GRAD named" else []
        values = _run(paddle, program, params, feed, list(ours))
        if isinstance(values, str):
            print(f"{label}, {variant}: fails: {values.strip()}")
            continue
        scale = max(float(np.abs(v).max()) for v in ours.values())
        worst = max(float(np.abs(v - ours[n]).max()) for n, v in zip(ours, values))
        print(f"{label}, {variant} {named}: largest difference from gradc {worst:.3g} (largest gradient {scale:.3g})")


def _miniature(paddle):
    """h = x; three times: cache = gather(concat([cache, h w], 1), [1, 0]); h = tanh(sum(cache, 1))."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import paddle_legacy_shim
    paddle_legacy_shim.install()
    main = paddle.static.Program()
    with paddle.static.program_guard(main, paddle.static.Program()):
        x = paddle.static.data("x", [2, 4], "float32")
        x.stop_gradient = False
        w = paddle.create_parameter([4, 4], "float32", name="w")
        index = paddle.assign(np.array([1, 0], "int64"))

        def body(step, h, cache):
            cache = paddle.gather(paddle.concat([cache, paddle.unsqueeze(paddle.matmul(h, w), 1)], axis=1), index)
            return [step + 1, paddle.tanh(paddle.sum(cache, axis=1)), cache]

        start = [paddle.full([1], 0, "int64"), paddle.scale(x, 1.0), paddle.full([2, 0, 4], 0.0, "float32")]
        _, h, _ = paddle.static.nn.while_loop(lambda step, *_: step < 3, body, start)
        paddle.static.append_backward(paddle.sum(h))
    return main.desc.serialize_to_string()


def paddle_step(out: Path) -> None:
    import paddle
    paddle.enable_static()
    beam = (out / "beam_train.pb").read_bytes()

    def load_beam():
        program = paddle.static.Program.parse_from_string(beam)
        block = program.global_block()
        for i in reversed(range(len(block.ops))):
            if block.ops[i].type in ("feed", "fetch"):
                block._remove_op(i)
        return program

    _report(paddle, "BEAM", load_beam, dict(np.load(out / "beam_params.npz")), dict(np.load(BEAM / "feed_beam.npz")),
            dict(np.load(out / "beam_grads.npz")))
    mini = _miniature(paddle)
    (out / "miniature.pb").write_bytes(mini)   # Paddle's own backward, for gradc to run: gradc.load(DIR/miniature.pb)
    params, feed = {"w": np.eye(4, dtype=np.float32) * 0.5}, {"x": np.arange(8, dtype=np.float32).reshape(2, 4) / 8}
    for variant in ("as written", "X@GRAD named"):
        program = paddle.static.Program.parse_from_string(mini)
        named = _named_carried_grads(program) if variant == "X@GRAD named" else []
        values = _run(paddle, program, params, feed, ["w@GRAD", "x@GRAD"])
        shown = values.strip() if isinstance(values, str) else np.round(values[0][0], 6).tolist()
        print(f"miniature, {variant} {named}: w@GRAD[0] {shown}")


if __name__ == "__main__":
    (gradc_step if sys.argv[1] == "gradc" else paddle_step)(Path(sys.argv[2]))
