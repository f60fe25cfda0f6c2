"""The mixture-of-experts engineer's programs of docs/tools.md's 'A mixture-of-experts engineer's week', written with
Paddle 3.3.1's layers in legacy static mode (FLAGS_enable_pir_api=0):

- switch: a small transformer-style classifier (a Linear embedding, LayerNorm, nn.MultiHeadAttention, a residual,
  LayerNorm, a sparse MoE FFN with a residual, mean pooling, a Linear head, cross entropy) whose MoE is a switch
  (top-1) layer: a gating Linear, softmax, paddle.topk, one_hot, expert capacity by a cumsum of the one-hot (tokens
  past it dropped by a mask), dispatch and combine by einsum, experts as paddle.bmm of stacked weights; loss + 0.01 x
  the load-balancing loss (E x sum(token fraction x mean gate prob)) + 0.001 x the router z-loss (mean logsumexp^2).
- top2: the same classifier with a noisy top-2 gate (fed gaussian noise scaled by softplus of a second Linear), the
  two gate probs renormalised, tokens repeated by index_select, each copy's expert weights by paddle.gather of the
  stacked weights (repeated ids), paddle.bmm, and the outputs summed back per token by scatter_nd_add.
- loop: top-1 by a Python loop over experts, each its own Linear-GELU-Linear, its tokens by paddle.nonzero and
  gather_nd, their gate probs by masked_select, put back by scatter_nd_add.
  All three: AdamW(0.01, weight_decay 0.01), 6 steps of 4 sequences of 6 tokens; the expert load counts fetched.
- tuned: the switch classifier under AdamW(LinearWarmup(CosineAnnealingDecay(0.01, 6), 2, 0, 0.01), weight_decay
  0.05, apply_decay_param_fun leaving out biases and LayerNorms, ClipGradByGlobalNorm(1.0)), the schedule stepped.
- corners.npz / corner_<name>.pb: float64 programs sum(w * f(x)) and Paddle's gradients (paddle.static.gradients):
  topk of values with ties, scatter with duplicate indices (overwrite and add), index_select and gather with repeated
  ids, masked_select, einsum with a repeated subscript, take_along_axis by argsort and argmax; corner_<name>_paddle.pb
  Paddle's own gradient programs of five of them.
- einsum_loss.pb / .npz: float64 loss = einsum('nd,nd->', x, x), the last op an einsum, and Paddle's gradient.
- switch_pir.json / .pdiparams (PIR half, a second interpreter): the switch classifier built in PIR static mode,
  save_inference_model'd; predictor_pir.npz: Paddle's executor's and Predictor's (oneDNN off) logits and loads.

Each model: forward.pb (main.clone() before minimize), train.pb (Paddle's own), startup.pb, init.npz, data.npz,
trained.npz, outputs.npz (first batch, trained weights), the losses in meta.json.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week44.py tests/data/paddle/user_week44
"""

import json
from pathlib import Path

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle_programs import (
    gzip_file,
    minimized,
    pir_half,
    script_main,
    train_saving_values,
    weighted_corner,
    without_callstacks,
    write_gz,
    write_programs_gz,
)

BATCH, TOKENS, FEATURES, DIM, HIDDEN, EXPERTS, CLASSES, STEPS = 4, 6, 5, 8, 12, 4, 3, 6
CAPACITY = 8  # of 24 tokens a batch over 4 experts: some dropped in the switch layer
RNG = np.random.default_rng(44)


def experts_weights():
    """Stacked expert weights [E, DIM, HIDDEN], [E, HIDDEN, DIM] as a user creates them."""
    w1 = paddle.create_parameter([EXPERTS, DIM, HIDDEN], "float32", "experts_w1",
                                 default_initializer=nn.initializer.XavierUniform())
    w2 = paddle.create_parameter([EXPERTS, HIDDEN, DIM], "float32", "experts_w2",
                                 default_initializer=nn.initializer.XavierUniform())
    return w1, w2


def router_losses(logits, probs, mask):
    """Load balancing (E x sum of the token fraction times the mean prob each expert) and z-loss."""
    fraction = paddle.mean(mask, axis=0)
    balance = EXPERTS * paddle.sum(fraction * paddle.mean(probs, axis=0))
    z_loss = paddle.mean(paddle.square(paddle.logsumexp(logits, axis=-1)))
    return balance, z_loss


def switch_moe(x):
    """Top-1 with capacity: positions by a cumsum of the one-hot, tokens past CAPACITY dropped."""
    logits = nn.Linear(DIM, EXPERTS, bias_attr=False)(x)
    probs = F.softmax(logits, axis=-1)
    top_p, top_i = paddle.topk(probs, 1)
    mask = F.one_hot(top_i.squeeze(-1), EXPERTS)
    position = paddle.cumsum(mask, axis=0) * mask - 1.0
    kept = mask * paddle.cast(position < CAPACITY, "float32")
    slots = F.one_hot(paddle.cast(paddle.clip(position, 0.0, CAPACITY - 1.0), "int64"), CAPACITY) * kept.unsqueeze(-1)
    dispatched = paddle.einsum("nec,nd->ecd", slots, x)
    w1, w2 = experts_weights()
    out = paddle.bmm(F.gelu(paddle.bmm(dispatched, w1)), w2)
    y = paddle.einsum("nec,ecd->nd", slots * top_p.unsqueeze(-1), out)
    balance, z_loss = router_losses(logits, probs, mask)
    return y, balance, z_loss, paddle.sum(kept, axis=0)


def top2_moe(x, noise):
    """Noisy top-2: repeated tokens by index_select, expert weights by gather, combined by scatter_nd_add."""
    clean = nn.Linear(DIM, EXPERTS, bias_attr=False)(x)
    logits = clean + noise * F.softplus(nn.Linear(DIM, EXPERTS, bias_attr=False)(x))
    probs = F.softmax(logits, axis=-1)
    top_p, top_i = paddle.topk(probs, 2)
    top_p = top_p / paddle.sum(top_p, axis=-1, keepdim=True)
    tokens = paddle.shape(x)[0]
    token_ids = paddle.reshape(paddle.expand(paddle.arange(tokens).unsqueeze(-1), [tokens, 2]), [-1])
    expert_ids = paddle.reshape(top_i, [-1])
    w1, w2 = experts_weights()
    copies = paddle.index_select(x, token_ids).unsqueeze(1)
    out = paddle.bmm(F.gelu(paddle.bmm(copies, paddle.gather(w1, expert_ids))), paddle.gather(w2, expert_ids))
    weighted = out.squeeze(1) * paddle.reshape(top_p, [-1, 1])
    y = paddle.scatter_nd_add(paddle.zeros_like(x), token_ids.unsqueeze(-1), weighted)
    mask = paddle.sum(F.one_hot(top_i, EXPERTS), axis=1)
    balance, z_loss = router_losses(logits, probs, mask / 2.0)
    return y, balance, z_loss, paddle.sum(mask, axis=0)


def loop_moe(x):
    """Top-1 by a loop over experts, each its own Linear FFN: the tokens routed to it by paddle.nonzero and gather,
    their gate probs by masked_select, the outputs put back by scatter_nd_add."""
    logits = nn.Linear(DIM, EXPERTS, bias_attr=False)(x)
    probs = F.softmax(logits, axis=-1)
    top_p, top_i = paddle.topk(probs, 1)
    y = paddle.zeros_like(x)
    for expert in range(EXPERTS):
        routed = top_i == expert
        rows = paddle.nonzero(routed.squeeze(-1))
        ffn = nn.Sequential(nn.Linear(DIM, HIDDEN), nn.GELU(), nn.Linear(HIDDEN, DIM))
        out = ffn(paddle.gather_nd(x, rows)) * paddle.masked_select(top_p, routed).unsqueeze(-1)
        y = paddle.scatter_nd_add(y, rows, out)
    mask = F.one_hot(top_i.squeeze(-1), EXPERTS)
    balance, z_loss = router_losses(logits, probs, mask)
    return y, balance, z_loss, paddle.sum(mask, axis=0)


def classifier(variant: str):
    feats = paddle.static.data("feats", [-1, TOKENS, FEATURES], "float32")
    label = paddle.static.data("label", [-1, 1], "int64")
    h = nn.LayerNorm(DIM)(nn.Linear(FEATURES, DIM)(feats))
    h = nn.LayerNorm(DIM)(h + nn.MultiHeadAttention(DIM, 2)(h, h, h))
    flat = paddle.reshape(h, [-1, DIM])
    if variant == "switch":
        y, balance, z_loss, load = switch_moe(flat)
    elif variant == "loop":
        y, balance, z_loss, load = loop_moe(flat)
    else:
        noise = paddle.static.data("noise", [-1, TOKENS, EXPERTS], "float32")
        y, balance, z_loss, load = top2_moe(flat, paddle.reshape(noise, [-1, EXPERTS]))
    h = paddle.reshape(flat + y, [-1, TOKENS, DIM])
    logits = nn.Linear(DIM, CLASSES)(paddle.mean(h, axis=1))
    task = F.cross_entropy(logits, label)
    loss = task + 0.01 * balance + 0.001 * z_loss
    return loss, {"logits": logits.name, "load": load.name, "balance": balance.name, "z_loss": z_loss.name}


def data(variant: str) -> dict:
    count = BATCH * STEPS
    feats = RNG.normal(size=(count, TOKENS, FEATURES)).astype(np.float32)
    label = (feats[:, :, 0].mean(1) > 0).astype(np.int64) + (feats[:, :, 1].mean(1) > 0.3)
    result = {"feats": feats, "label": label.reshape(-1, 1).astype(np.int64)}
    if variant == "top2":
        result["noise"] = RNG.normal(size=(count, TOKENS, EXPERTS)).astype(np.float32)
    return result


def tuned_adamw():
    """Warmup into a cosine decay, no decay on biases and norms, the global norm clipped at 1."""
    schedule = paddle.optimizer.lr.LinearWarmup(paddle.optimizer.lr.CosineAnnealingDecay(0.01, T_max=STEPS), 2, 0.0,
                                                0.01)
    def decayed(name: str) -> bool:
        return not (name.endswith(".b_0") or name.startswith("layer_norm"))
    return paddle.optimizer.AdamW(schedule, weight_decay=0.05, grad_clip=nn.ClipGradByGlobalNorm(1.0),
                                  apply_decay_param_fun=decayed)


def train_model(out: Path, name: str, exe, variant: str = "", optimizer=None) -> dict:
    main, startup, forward, chosen, (loss, names) = minimized(
        lambda: classifier(variant or name), optimizer or (lambda: paddle.optimizer.AdamW(0.01, weight_decay=0.01)),
        seed=44)
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    batches = data(variant or name)
    scope, losses = train_saving_values(exe, folder, (forward, main, startup), loss, batches, STEPS, BATCH, chosen)
    with paddle.static.scope_guard(scope):
        first = {k: v[:BATCH] for k, v in batches.items()}
        outputs = exe.run(forward, feed=first, fetch_list=list(names.values()))
    np.savez(folder / "outputs.npz", **dict(zip(names, outputs)))
    np.savez_compressed(folder / "data.npz", **batches)
    write_programs_gz(folder, {"forward": forward, "train": main, "startup": startup})
    return {**names, "loss": loss.name, "losses": losses}


def corner_cases() -> dict:
    """name -> (feeds, f(x, extra...) building the value whose weighted sum is the loss)."""
    ties = np.array([[1.0, 3.0, 3.0, 2.0, 3.0], [0.5, 0.5, 0.5, 0.5, 0.1], [2.0, 1.0, 2.0, 0.0, -1.0]])
    x = RNG.normal(size=(5, 3))
    updates = RNG.normal(size=(4, 3))
    dup = np.array([1, 3, 1, 1], dtype=np.int64)
    return {
        "topk_ties": ({"x": ties}, lambda f: paddle.topk(f["x"], 3)[0]),
        "scatter_overwrite": ({"x": x, "updates": updates},
                              lambda f: paddle.scatter(f["x"], paddle.to_tensor(dup), f["updates"], overwrite=True)),
        "scatter_add": ({"x": x, "updates": updates},
                        lambda f: paddle.scatter(f["x"], paddle.to_tensor(dup), f["updates"], overwrite=False)),
        "index_select": ({"x": x}, lambda f: paddle.index_select(f["x"], paddle.to_tensor(dup), axis=0)),
        "gather": ({"x": x}, lambda f: paddle.gather(f["x"], paddle.to_tensor(np.array([4, 0, 4, 4, 2])))),
        "masked_select": ({"x": x}, lambda f: paddle.masked_select(f["x"], f["x"] > 0.2)),
        "einsum_diag": ({"x": RNG.normal(size=(4, 4))}, lambda f: paddle.einsum("ii->i", f["x"])),
        "einsum_trace_mul": ({"x": RNG.normal(size=(3, 3)), "y": RNG.normal(size=(3, 2))},
                             lambda f: paddle.einsum("ii,ij->j", f["x"], f["y"])),
        "argsort": ({"x": ties}, lambda f: paddle.take_along_axis(f["x"], paddle.argsort(f["x"], axis=1), 1)),
        "argmax": ({"x": x}, lambda f: paddle.take_along_axis(f["x"], paddle.argmax(f["x"], 1, keepdim=True), 1)),
    }


PADDLE_GRADIENT_PROGRAMS = ("topk_ties", "scatter_overwrite", "scatter_add", "masked_select", "einsum_trace_mul")


def corner_programs(out: Path, exe) -> None:
    results = {}
    for name, (feeds, build) in corner_cases().items():
        forward, main, numbers = weighted_corner(exe, feeds, build, lambda size: RNG.normal(size=size))
        results.update({f"{name}_{key}": value for key, value in numbers.items() if key != "value"})
        write_gz(out / f"corner_{name}.pb", without_callstacks(forward))
        if name in PADDLE_GRADIENT_PROGRAMS:
            write_gz(out / f"corner_{name}_paddle.pb", without_callstacks(main))
    np.savez(out / "corners.npz", **results)


def einsum_loss_program(out: Path, exe) -> None:
    """float64 loss = einsum('nd,nd->', x, x) / n, a router z-loss's square summed by einsum, the last op an einsum;
    Paddle's gradient of x."""
    x = RNG.normal(size=(6, 4))
    main = paddle.static.Program()
    with paddle.static.program_guard(main, paddle.static.Program()):
        xv = paddle.static.data("x", [6, 4], "float64")
        xv.stop_gradient = False
        loss = paddle.einsum("nd,nd->", xv, xv)
        forward = main.clone()
        (grad,) = paddle.static.gradients(loss, xv)
    value, gradient = exe.run(main, feed={"x": x}, fetch_list=[loss, grad])
    write_gz(out / "einsum_loss.pb", without_callstacks(forward))
    np.savez(out / "einsum_loss.npz", x=x, loss=value, grad=gradient)


def main(out: Path) -> None:
    import paddle_legacy_shim
    paddle_legacy_shim.install()
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    meta = {name: train_model(out, name, exe) for name in ("switch", "top2", "loop")}
    corner_programs(out, exe)
    einsum_loss_program(out, exe)
    meta["tuned"] = train_model(out, "tuned", exe, "switch", tuned_adamw)
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    pir_half(__file__, out)


def main_pir(out: Path) -> None:
    """The switch classifier built again in PIR static mode, saved by save_inference_model (feats in; logits and the
    expert load out), Paddle's executor's and its Predictor's outputs on the first batch."""
    paddle.enable_static()
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 44
    with paddle.static.program_guard(main, startup):
        feats = paddle.static.data("feats", [-1, TOKENS, FEATURES], "float32")
        h = nn.LayerNorm(DIM)(nn.Linear(FEATURES, DIM)(feats))
        h = nn.LayerNorm(DIM)(h + nn.MultiHeadAttention(DIM, 2)(h, h, h))
        flat = paddle.reshape(h, [-1, DIM])
        y, _, _, load = switch_moe(flat)
        logits = nn.Linear(DIM, CLASSES)(paddle.mean(paddle.reshape(flat + y, [-1, TOKENS, DIM]), axis=1))
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    first = {"feats": np.load(out / "switch" / "data.npz")["feats"][:BATCH]}
    executor = exe.run(main, feed=first, fetch_list=[logits, load])
    paddle.static.save_inference_model(str(out / "switch_pir"), [feats], [logits, load], exe, program=main)
    exported = out / "switch_pir.json"
    config = paddle.inference.Config(str(exported), str(out / "switch_pir.pdiparams"))
    config.disable_mkldnn()
    predictor = paddle.inference.create_predictor(config)
    predictor.get_input_handle("feats").copy_from_cpu(first["feats"])
    predictor.run()
    predicted = [predictor.get_output_handle(name).copy_to_cpu() for name in predictor.get_output_names()]
    gzip_file(exported)
    np.savez(out / "predictor_pir.npz", executor_logits=executor[0], executor_load=executor[1],
             logits=predicted[0], load=predicted[1])


if __name__ == "__main__":
    script_main(main, main_pir)
