"""The parameter-efficient fine-tuning engineer's programs of docs/tools.md's 'A parameter-efficient fine-tuning
engineer's week', written with Paddle 3.3.1's layers in legacy static mode (FLAGS_enable_pir_api=0).

- pretrain: an MLP block (Linear 8->16, GELU, Linear 16->16, GELU, Linear 16->4 head) trained by Adam on task A,
  saved by paddle.static.save (pretrained.pdparams: its 6 weights; .pdopt: Adam's state).
- lora: the same block on task B with LoRA adapters (rank 4, alpha 8: x A B * 2) on the three Linears, the base frozen
  three ways (layer 0 by ParamAttr(trainable=False), layer 1 by stop_gradient=True after it is made, layer 2 by
  ParamAttr(learning_rate=0.0)), the adapters A Normal(0, 0.02)-initialised and B zeros, AdamW(0.01, weight_decay=0.01)
  for 5 steps: lora.pb (forward), lora_train.pb (Paddle's program), lora_startup.pb, losses, lora_trained.npz
  (every parameter after training). merged.pb: the plain block (names of the pretrained) for the merged weights
  (W + A B * 2), paddle's merged outputs on the test set.
- bitfit: the pretrained block with only its biases trained (weights ParamAttr(trainable=False)), Momentum(0.05, 0.9).
- ewc: the pretrained block trained on task B with an EWC penalty to the pretrained weights (the Fisher diagonal
  fisher.npz: the mean squared gradient of the task-A loss over 4 batches of 8, Paddle's) plus a replay batch of task
  A; the Fisher and the old weights are fed; Adam(0.01), 5 steps.
- layerwise: the block with ParamAttr learning_rate multipliers 0.25, 0.5, 1 (layer-wise decay), SGD(0.1), 4 steps.
- PIR half: the merged block in dygraph saved by paddle.jit.save, the Predictor's outputs on the test set.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week42.py tests/data/paddle/user_week42
"""

import json
from pathlib import Path

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F
import paddle_legacy_shim
from paddle_programs import gzip_file, pir_half, pir_minimized, predict, script_main, write_gz

FEATURES, HIDDEN, CLASSES, RANK, ALPHA = 8, 16, 4, 4, 8.0
BATCH, STEPS = 8, 5
RNG = np.random.default_rng(42)


def stripped(program) -> bytes:
    """The program's bytes as the user's program.desc.serialize_to_string() writes them, less the ops' stack traces.
    Not through Program.parse_from_string (paddle_programs.without_callstacks): Paddle's parse makes every parameter
    trainable again, and the frozen parameters' stop_gradient is what this week is about."""
    for block in program.blocks:
        for op in block.ops:
            if op.desc.has_attr("op_callstack"):
                op.desc.remove_attr("op_callstack")
    return program.desc.serialize_to_string()


def task(count: int, rule: int) -> dict:
    """Points in 8 dimensions, classed by the sign pattern of two projections (task A: features 0-3, B: 4-7)."""
    x = RNG.normal(size=(count, FEATURES)).astype(np.float32)
    part = x[:, 4 * rule:4 * rule + 4]
    label = (part[:, :2].sum(1) > 0).astype(np.int64) * 2 + (part[:, 2:].sum(1) > 0)
    return {"x": x, "label": label.reshape(-1, 1)}


def base_attrs(frozen: str, layer: int):
    """The weight and bias ParamAttrs of base layer ``layer``: frozen the way the LoRA program freezes it."""
    if frozen == "lora":
        if layer == 2:
            return paddle.ParamAttr(learning_rate=0.0), paddle.ParamAttr(learning_rate=0.0)
        return paddle.ParamAttr(trainable=layer != 0), paddle.ParamAttr(trainable=layer != 0)
    if frozen == "bitfit":
        return paddle.ParamAttr(trainable=False), None
    if frozen == "layerwise":
        rate = [0.25, 0.5, 1.0][layer]
        return paddle.ParamAttr(learning_rate=rate), paddle.ParamAttr(learning_rate=rate)
    return None, None


class Block(nn.Layer):
    """Linear-GELU-Linear-GELU-Linear; with ``lora``, each Linear gets x A B * ALPHA / RANK beside it."""

    def __init__(self, frozen: str = "", lora: bool = False):
        super().__init__()
        sizes = [(FEATURES, HIDDEN), (HIDDEN, HIDDEN), (HIDDEN, CLASSES)]
        self.linears = nn.LayerList([nn.Linear(i, o, *base_attrs(frozen, k)) for k, (i, o) in enumerate(sizes)])
        if frozen == "lora":   # layer 1's base frozen the other way a user writes it
            self.linears[1].weight.stop_gradient = True
            self.linears[1].bias.stop_gradient = True
        self.adapters = []
        for k, (i, o) in enumerate(sizes if lora else []):
            a = self.create_parameter([i, RANK], attr=paddle.ParamAttr(name=f"lora{k}_A"),
                                      default_initializer=nn.initializer.Normal(0, 0.02))
            b = self.create_parameter([RANK, o], attr=paddle.ParamAttr(name=f"lora{k}_B"),
                                      default_initializer=nn.initializer.Constant(0.0))
            self.adapters.append((a, b))

    def forward(self, x):
        for k, linear in enumerate(self.linears):
            y = linear(x)
            if self.adapters:
                a, b = self.adapters[k]
                y = y + paddle.matmul(paddle.matmul(x, a), b) * (ALPHA / RANK)
            x = F.gelu(y) if k < 2 else y
        return x


def build(frozen: str = "", lora: bool = False):
    x = paddle.static.data("x", [-1, FEATURES], "float32")
    label = paddle.static.data("label", [-1, 1], "int64")
    block = Block(frozen, lora)
    logits = block(x)
    loss = paddle.mean(F.cross_entropy(logits, label))
    return block, logits, loss


def run_program(exe, name: str, out: Path, optimizer, steps: list, frozen: str = "", lora: bool = False,
                initial: dict | None = None, extra=None) -> dict:
    """Build, minimize, train on ``steps`` (feeds) from the startup with ``initial`` overriding; keep the forward,
    Paddle's training program, the startup, the losses and every parameter after training."""
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        main.random_seed = startup.random_seed = 42
        block, logits, loss = build(frozen, lora)
        if extra is not None:
            loss = extra(block, loss)
        forward = main.clone()
        optimizer().minimize(loss)
    names = [p.name for p in main.all_parameters()]
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        for key, value in (initial or {}).items():
            scope.var(key).get_tensor().set(value, paddle.CPUPlace())
        start = {n: np.array(scope.var(n).get_tensor()) for n in names}
        losses = [float(exe.run(main, feed=feed, fetch_list=[loss])[0]) for feed in steps]
        trained = {n: np.array(scope.var(n).get_tensor()) for n in names}
        if name == "pretrain":
            paddle.static.save(main, str(out / "pretrained"))
    np.savez(out / f"{name}_start.npz", **start)
    np.savez(out / f"{name}_trained.npz", **trained)
    for suffix, program in (("", forward), ("_train", main), ("_startup", startup)):
        write_gz(out / f"{name}{suffix}.pb", stripped(program))
    return {"loss": loss.name, "logits": logits.name, "losses": losses, "parameters": names,
            "trainable": [p.name for p in main.all_parameters() if p.trainable and not p.stop_gradient]}


def fisher(exe, pretrained: dict, old: dict, out: Path) -> np.ndarray:
    """EWC's Fisher diagonal: the mean over 4 batches of the squared gradient of task A's loss, Paddle's."""
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        block, _, loss = build()
        grads = paddle.static.gradients(loss, block.parameters())
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        for key, value in pretrained.items():
            scope.var(key).get_tensor().set(value, paddle.CPUPlace())
        squares = [[g ** 2 for g in exe.run(main, feed=feed, fetch_list=grads)] for feed in batches(old, 4)]
    names = [p.name for p in block.parameters()]
    result = {n: np.mean([s[k] for s in squares], axis=0) for k, n in enumerate(names)}
    np.savez(out / "fisher.npz", **result)
    return result


def ewc_penalty(lam: float):
    """loss + lam/2 sum F (w - w_old)^2 over every weight, F and w_old fed as data (fisher_NAME, old_NAME)."""
    def extra(block, loss):
        terms = []
        for p in block.parameters():
            weight = paddle.static.data(f"fisher_{p.name}", p.shape, "float32")
            old = paddle.static.data(f"old_{p.name}", p.shape, "float32")
            terms.append(paddle.sum(weight * paddle.square(p - old)))
        return loss + lam / 2 * paddle.add_n(terms)
    return extra


def batches(data: dict, steps: int, start: int = 0):
    return [{k: v[(start + s) * BATCH:(start + s + 1) * BATCH] for k, v in data.items()} for s in range(steps)]


def main(out: Path) -> None:
    paddle_legacy_shim.install()
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    old, new, test = task(64, 0), task(64, 1), task(16, 1)
    np.savez(out / "data_a.npz", **old)
    np.savez(out / "data_b.npz", **new)
    np.savez(out / "test_b.npz", **test)
    meta = {"pretrain": run_program(exe, "pretrain", out, lambda: paddle.optimizer.Adam(0.02),
                                    batches(old, 8))}
    pretrained = dict(np.load(out / "pretrain_trained.npz"))
    meta["lora"] = run_program(exe, "lora", out, lambda: paddle.optimizer.AdamW(0.01, weight_decay=0.01),
                               batches(new, STEPS), "lora", True, pretrained)
    meta["bitfit"] = run_program(exe, "bitfit", out, lambda: paddle.optimizer.Momentum(0.05, 0.9),
                                 batches(new, STEPS), "bitfit", False, pretrained)
    meta["layerwise"] = run_program(exe, "layerwise", out, lambda: paddle.optimizer.SGD(0.1),
                                    batches(new, 4), "layerwise", False, pretrained)
    importance = fisher(exe, pretrained, old, out)
    # each step: a batch of task B with a replay batch of 4 task-A examples, the Fisher and old weights fed
    replay = []
    for s, feed in enumerate(batches(new, STEPS)):
        x = np.concatenate([feed["x"], old["x"][40 + 4 * s:44 + 4 * s]])
        label = np.concatenate([feed["label"], old["label"][40 + 4 * s:44 + 4 * s]])
        replay.append({"x": x, "label": label, **{f"fisher_{k}": v for k, v in importance.items()},
                       **{f"old_{k}": v for k, v in pretrained.items()}})
    np.savez(out / "ewc_data.npz", x=np.concatenate([f["x"] for f in replay]),
             label=np.concatenate([f["label"] for f in replay]))
    meta["ewc"] = run_program(exe, "ewc", out, lambda: paddle.optimizer.Adam(0.01), replay, "", False,
                              pretrained, ewc_penalty(100.0))
    merged_outputs(exe, out, meta)
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    (out / "pretrained.pdopt").unlink()   # Adam's state and the program: the fine-tuner loads weights only
    (out / "pretrained.pdmodel").unlink()
    pir_half(__file__, out)


def merged_weights(trained: dict) -> dict:
    """W + A B * ALPHA / RANK for each base weight; the biases as they are."""
    merged = {}
    for k in range(3):
        merged[f"linear_{k}.w_0"] = trained[f"linear_{k}.w_0"] + trained[f"lora{k}_A"] @ trained[f"lora{k}_B"] * (
            ALPHA / RANK)
        merged[f"linear_{k}.b_0"] = trained[f"linear_{k}.b_0"]
    return merged


def merged_outputs(exe, out: Path, meta: dict) -> None:
    """merged.pb (the plain block, for_test) and Paddle's outputs of the adapter model and the merged one."""
    trained, test = dict(np.load(out / "lora_trained.npz")), dict(np.load(out / "test_b.npz"))
    results = {}
    for name, lora, values in (("adapter", True, trained), ("merged", False, merged_weights(trained))):
        main, startup = paddle.static.Program(), paddle.static.Program()
        with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
            _, logits, _ = build("", lora)
        scope = paddle.static.Scope()
        with paddle.static.scope_guard(scope):
            exe.run(startup)
            for key, value in values.items():
                scope.var(key).get_tensor().set(value, paddle.CPUPlace())
            results[name] = exe.run(main, feed={"x": test["x"], "label": test["label"]}, fetch_list=[logits])[0]
        if name == "merged":
            write_gz(out / "merged.pb", stripped(main.clone(for_test=True)))
            meta["merged"] = {"logits": logits.name}
    np.savez(out / "paddle_outputs.npz", **results)


def pir_training(out: Path, name: str, optimizer, frozen: str, lora: bool, steps: int) -> list[float]:
    """The LoRA or layer-wise program built and minimized in Paddle 3's PIR static mode: its training program (the
    loss fetched as "loss") and startup as NAME_pir_train.json / NAME_pir_startup.json, Paddle's losses from the
    pretrained weights."""
    main, startup, loss, _ = pir_minimized(out, f"{name}_", lambda: build(frozen, lora)[2], optimizer, 42)
    exe, scope = paddle.static.Executor(paddle.CPUPlace()), paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        for key, value in np.load(out / "pretrain_trained.npz").items():
            scope.var(key).get_tensor().set(value, paddle.CPUPlace())
        losses = [float(exe.run(main, feed=feed, fetch_list=[loss])[0])
                  for feed in batches(dict(np.load(out / "data_b.npz")), steps)]
    paddle.disable_static()
    return losses


def main_pir(out: Path) -> None:
    """The LoRA and layer-wise programs in PIR static mode; the merged block in dygraph, saved by paddle.jit.save and
    run by the Predictor on the test set."""
    losses = {"lora": pir_training(out, "lora", lambda: paddle.optimizer.AdamW(0.01, weight_decay=0.01), "lora", True,
                                   STEPS),
              "layerwise": pir_training(out, "layerwise", lambda: paddle.optimizer.SGD(0.1), "layerwise", False, 4)}
    (out / "pir_losses.json").write_text(json.dumps(losses, indent=1) + "\n")
    merged, test = merged_weights(dict(np.load(out / "lora_trained.npz"))), dict(np.load(out / "test_b.npz"))
    with paddle.utils.unique_name.guard():
        block = Block()
    for parameter in block.parameters():
        parameter.set_value(merged[parameter.name])
    block.eval()
    paddle.jit.save(block, str(out / "merged_pir"),
                    input_spec=[paddle.static.InputSpec([-1, FEATURES], "float32", "x")])
    predicted = predict(str(out / "merged_pir.json"), str(out / "merged_pir.pdiparams"), {"x": test["x"]})
    np.savez(out / "predictor_pir.npz", **predicted)
    gzip_file(out / "merged_pir.json")


if __name__ == "__main__":
    script_main(main, main_pir)
