"""bfloat16 and float16 models as a CUDA build of Paddle 3.3.1 saves them with paddle.jit.save, made on a CPU build:
an MLP (Linear 8 -> 16, LayerNorm, GELU, Linear 16 -> 4) three ways a GPU user lowers its precision:

- o1: the forward under paddle.amp.auto_cast(level="O1", dtype): casts around each white-listed op;
- o2: paddle.amp.decorate(level="O2", dtype) (every parameter in dtype, but LayerNorm's float32 for float16) and
  the forward under auto_cast O2; decorate leaves a model on a CPU place as it is, so the tool calls what it calls on
  a GPU (amp_initialize);
- cast: model.to(dtype=dtype), its input in dtype too.

tools/paddle_gpu_build.py's as_cuda_build makes every nn.Linear a pd_op.linear_v2, as on a GPU. The CPU build's
linear_v2 API then refuses a bfloat16 or float16 operand (its dtype check lists the kernels registered here: float32,
float64), so ``low_precision_linear`` stands in for paddle._C_ops.linear_v2: it makes the casts Paddle's AMP makes
for a white-listed op (to the AMP dtype), builds the op through Paddle's own API on float32 copies, then points its
operands back at the low-precision values and types its result as they are (the op a GPU build writes). Every other
op is Paddle's own. The CPU build's float16 kernels are too few to build anything else (add, layer_norm, gelu, matmul
refuse float16), so each float16 program is the bfloat16 one with the dtype renamed: Paddle's AMP lists for the two
differ only by fused GPU ops these models do not hold (amp/amp_lists.py), so a GPU writes the same ops, casts and
attributes. Paddle loads every program back (deserialize_pir_program), float16 ones included.

Numbers: Paddle's CPU build has no bfloat16 or float16 linear_v2 kernel, so no program here runs in Paddle; the
reference is Paddle's float32 run of the same model (dygraph, linear_v2 in float32) with the parameters at their
low-precision values, which the test compares at the format's tolerance. Into tests/data/paddle/gpu_lowprec/<case>/:
model.json (the inference program, output "out"), train.json (paddle.jit.save of the loss ((out - y)^2).mean() over
inputs x and y, output "loss"; gradc appends its own backward), params.npz (each parameter as float32 holding its
exact value, or float16; meta.json's "dtypes" names each one's dtype), feed.npz, expected.npz (Paddle's float32 out,
loss and "<param>@GRAD"), meta.json. Not part of the package: it needs paddlepaddle.

    /work/paddle-venv/bin/python tools/paddle_gpu_lowprec_models.py
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import paddle
from paddle.amp.auto_cast import amp_initialize
from paddle.base import core, libpaddle
from paddle_gpu_build import as_cuda_build

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "gpu_lowprec"
SEED = 2031
LOW = ("bfloat16", "float16")


class Mlp(paddle.nn.Layer):
    def __init__(self):
        super().__init__()
        self.first, self.norm, self.second = paddle.nn.Linear(8, 16), paddle.nn.LayerNorm(16), paddle.nn.Linear(16, 4)

    def forward(self, x):
        return self.second(paddle.nn.functional.gelu(self.norm(self.first(x))))


class Precision(paddle.nn.Layer):
    """The model's forward under auto_cast at ``level`` (None: as it is)."""

    def __init__(self, model, level, dtype):
        super().__init__()
        self.model, self.level, self.dtype = model, level, dtype

    def forward(self, x):
        if self.level is None:
            return self.model(x)
        with paddle.amp.auto_cast(level=self.level, dtype=self.dtype):
            return self.model(x)


class Loss(paddle.nn.Layer):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x, y):
        return ((self.net(x).astype("float32") - y) ** 2).mean()


def low_precision_linear(original):
    """paddle._C_ops.linear_v2 that also builds bfloat16 / float16 operands (see the module's docstring)."""
    def linear_v2(x, weight, bias, transpose_weight):
        if not paddle.in_dynamic_mode():
            amp = core._get_amp_attrs()
            if amp._amp_level != core.AmpLevel.O0 and "linear_v2" in core._get_amp_op_list()[0]:
                target = getattr(paddle, amp._amp_dtype)
                with paddle.amp.auto_cast(enable=False):   # AMP's casts of a white-listed op's float operands
                    x, weight, bias = (v if v is None or v.dtype == target else v.astype(target)
                                       for v in (x, weight, bias))
            operands = [v for v in (x, weight, bias) if v is not None]
            if x.dtype in (paddle.bfloat16, paddle.float16):
                with paddle.amp.auto_cast(enable=False):
                    copies = [v.astype("float32") for v in operands]
                    out = original(*copies[:2], copies[2] if bias is not None else None, transpose_weight)
                op = out.get_defining_op()
                for index, value in enumerate(operands):
                    op.operand(index).set_source(value)
                for copy in copies:
                    copy.get_defining_op().erase()
                out.set_type(libpaddle.pir.create_shaped_type(x.type(), out.shape))
                return out
        return original(x, weight, bias, transpose_weight)
    return linear_v2


VARIANTS = {"o1": "the forward under paddle.amp.auto_cast(level='O1', dtype='{d}')",
            "o2": "paddle.amp.decorate(level='O2', dtype='{d}') and auto_cast O2",
            "cast": "model.to(dtype='{d}'), the input {d}"}


def _layers(variant: str, dtype: str):
    """(inference layer, training layer, the model, its float32 parameters before the cast), built in bfloat16 by
    ``dtype``'s rules (a float16 program is the bfloat16 one renamed)."""
    paddle.seed(SEED)
    model = Mlp()
    master = {p.name: p.numpy() for p in model.parameters()}
    level = {"o1": "O1", "o2": "O2"}.get(variant)
    if variant == "o2":   # what decorate(level="O2") runs on a GPU; on a CPU place it returns the model untouched
        if dtype == "float16":   # its float16 rule keeps LayerNorm's parameters float32 (need_keep_fp32)
            model.norm._cast_to_low_precision = False
        amp_initialize(models=[model], dtype="bfloat16", excluded_layers=None)
    elif variant == "cast":
        model.to(dtype="bfloat16")
    net = Precision(model, level, "bfloat16")
    return net, Loss(net), model, master


def _save(layer, path: Path, specs: list) -> None:
    paddle.jit.save(paddle.jit.to_static(layer, input_spec=specs, full_graph=True), str(path))
    path.with_suffix(".pdiparams").unlink()   # params.npz holds them


def _renamed(text: str) -> str:
    """The bfloat16 program with float16 in its place: element types and dtype attributes."""
    return text.replace('"0.t_bf16"', '"0.t_f16"').replace('"D":"bfloat16"', '"D":"float16"')


def _paddle_loads(path: Path) -> list[str]:
    program = paddle.static.Program()
    with paddle.pir_utils.IrGuard():
        core.deserialize_pir_program(str(path), program, 4)
    return sorted({op.name() for op in program.global_block().ops})


def _values(model, master: dict, dtype: str) -> tuple[dict, dict]:
    """Each parameter's value: where the built model holds it in bfloat16, its float32 value rounded to ``dtype`` (a
    float32 array of exact bfloat16 values, or a float16 array), else float32; and each one's dtype name."""
    params, dtypes = {}, {}
    for p in model.parameters():
        low = p.dtype == paddle.bfloat16
        value = master[p.name]
        if low:
            value = value.astype(np.float16) if dtype == "float16" else np.array(p.astype("float32").numpy())
        params[p.name] = value
        dtypes[p.name] = dtype if low else "float32"
    return params, dtypes


def _reference(params: dict, feed: dict) -> dict:
    """Paddle's float32 run of the model with these parameter values: out, loss and every parameter's gradient."""
    paddle.seed(SEED)
    model = Mlp()
    for p in model.parameters():
        p.set_value(params[p.name].astype(np.float32))
    out = model(paddle.to_tensor(feed["x"]))
    loss = ((out - paddle.to_tensor(feed["y"])) ** 2).mean()
    grads = paddle.grad([loss], model.parameters())
    return {"out": out.numpy(), "loss": loss.numpy(), **{f"{p.name}@GRAD": g.numpy()
                                                          for p, g in zip(model.parameters(), grads)}}


def write(variant: str, dtype: str, staging: Path) -> str:
    paddle.disable_static()
    with paddle.utils.unique_name.guard():
        net, loss, model, master = _layers(variant, dtype)
        x_spec = paddle.static.InputSpec([None, 8], "bfloat16" if variant == "cast" else "float32", "x")
        _save(net, staging / "model", [x_spec])
        _save(loss, staging / "train", [x_spec, paddle.static.InputSpec([None, 4], "float32", "y")])
    rng = np.random.default_rng(SEED)
    feed = {"x": rng.standard_normal((6, 8)).astype(np.float32), "y": rng.standard_normal((6, 4)).astype(np.float32)}
    out = OUT / f"{variant}_{dtype}"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    ops = {}
    for stem in ("model", "train"):
        text = (staging / f"{stem}.json").read_text()
        (out / f"{stem}.json").write_text(text if dtype == "bfloat16" else _renamed(text))
        ops[stem] = _paddle_loads(out / f"{stem}.json")
    params, dtypes = _values(model, master, dtype)
    if variant == "cast":   # the input as the program declares it: its values rounded to the format
        feed["x"] = paddle.to_tensor(feed["x"]).astype(dtype).astype("float32").numpy()
    expected = _reference(params, feed)
    if variant == "cast" and dtype == "float16":
        feed["x"] = feed["x"].astype(np.float16)
    np.savez_compressed(out / "params.npz", **params)
    np.savez_compressed(out / "feed.npz", **feed)
    np.savez_compressed(out / "expected.npz", **expected)
    built = "paddle.jit.save on a CPU build answering as a CUDA one" + (", the bfloat16 program renamed"
                                                                       if dtype == "float16" else "")
    meta = {"case": out.name, "paddle_version": paddle.__version__, "seed": SEED, "dtype": dtype,
            "description": VARIANTS[variant].format(d=dtype), "dtypes": dtypes, "pir_ops": ops["model"],
            "pir_train_ops": ops["train"], "built_by": built,
            "expected": "Paddle's float32 run of the model with the parameters at these values"}
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return f"{out.name}: {' '.join(ops['model'])}; {dtypes}"


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    as_cuda_build()
    paddle._C_ops.linear_v2 = low_precision_linear(paddle._C_ops.linear_v2)
    with tempfile.TemporaryDirectory() as staging:   # what jit.save writes, before it is renamed and moved
        for name in VARIANTS:
            for low in LOW:
                (Path(staging) / name / low).mkdir(parents=True)
                print(write(name, low, Path(staging) / name / low), flush=True)
    sys.exit(0)
