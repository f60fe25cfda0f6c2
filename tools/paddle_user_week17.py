"""The LLM fine-tuner's programs of docs/tools.md's 'An LLM fine-tuner's week': a tiny LLaMA-style decoder (2 layers,
hidden 16, 2 heads of 8, vocabulary 32) written with Paddle 3.3.1's ops: RMSNorm by hand (rsqrt of the mean square),
rotary embeddings by hand (sin/cos tables from arange, rotate-half by slicing and concat), causal attention with an
additive -1e4 mask (the second layer's: -inf by paddle.where, as masked_fill), a SwiGLU MLP, the output projection
tied to the input embedding, and cross-entropy with ignore_index -100 on the padding. The pretrained base weights are
frozen (trainable=False); LoRA adapters (rank 4, alpha 8: scaling 2) on the q and v projections train with AdamW
(weight decay 0.01 on the A matrices only, by apply_decay_param_fun), LinearWarmup(CosineAnnealingDecay) and
global-norm clipping 1.0, 6 steps.

Written (programs gzipped; legacy ones with FLAGS_enable_pir_api=0): lora.pb (the forward with the loss), startup.pb
(Paddle's, seeded: the adapters' initial values), base.npz (the pretrained base weights), data.npz (6 batches of 2 as
examples), adapters.npz (the adapters after Paddle's 6 steps, and before as NAME@initial), step.pb (the merged model
over tokens [B, S] with its key/value caches in and out, the tokens' positions following the caches' length: a prefill
when the caches are empty, a decoding step otherwise), generate.pb (greedy generation in one program: the prefill and
a while_loop of decoding steps, its caches growing), generation.npz (the prompt, the greedy tokens Paddle's executor
gives by step.pb and by generate.pb alike, the prefill's logits), meta.json (Paddle's losses per step of its own
minimize, the learning rates, the vars' names). tools/paddle_user_week17_pir.py adds the PIR programs.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week17.py tests/data/paddle/user_week17
    FLAGS_enable_pir_api=1 /work/paddle-venv/bin/python tools/paddle_user_week17_pir.py tests/data/paddle/user_week17
"""

import json
import math
import sys
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
import paddle_legacy_shim
from paddle_programs import without_callstacks, write_gz

VOCAB, HIDDEN, HEADS, DIM, FFN, LAYERS = 32, 16, 2, 8, 24, 2
RANK, ALPHA, EPS = 4, 8, 1e-6
BATCH, SEQ, STEPS, PROMPT, NEW = 2, 8, 6, 4, 6
BASE = {"embed": [VOCAB, HIDDEN], "final_norm": [HIDDEN]}
BASE |= {f"l{i}.{name}": shape for i in range(LAYERS) for name, shape in
         (("attn_norm", [HIDDEN]), ("wq", [HIDDEN, HIDDEN]), ("wk", [HIDDEN, HIDDEN]), ("wv", [HIDDEN, HIDDEN]),
          ("wo", [HIDDEN, HIDDEN]), ("mlp_norm", [HIDDEN]), ("w_gate", [HIDDEN, FFN]), ("w_up", [HIDDEN, FFN]),
          ("w_down", [FFN, HIDDEN]))}
ADAPTERS = {f"l{i}.lora_{proj}_{m}": shape for i in range(LAYERS) for proj in "qv"
            for m, shape in (("A", [HIDDEN, RANK]), ("B", [RANK, HIDDEN]))}
RNG = np.random.default_rng(17)


def pretrained() -> dict:
    """The 'pretrained' base weights: norms near 1, matrices N(0, 0.3)."""
    return {name: (1 + 0.1 * RNG.standard_normal(shape) if len(shape) == 1 else 0.3 * RNG.standard_normal(shape))
            .astype(np.float32) for name, shape in BASE.items()}


def rms_norm(x, weight, fused=False):
    if fused:
        from paddle.incubate.nn.functional import fused_rms_norm
        return fused_rms_norm(x, weight, None, EPS, 2)[0]
    return x * paddle.rsqrt(paddle.mean(x * x, axis=-1, keepdim=True) + EPS) * weight


def rotate(x, positions):
    """Rotary embedding of x [B, H, S, D] at float positions [S]: x cos + rotate_half(x) sin."""
    inv_freq = paddle.exp(paddle.arange(0, DIM, 2, dtype="float32") * (-math.log(10000.0) / DIM))
    freqs = paddle.unsqueeze(positions, 1) * paddle.unsqueeze(inv_freq, 0)
    table = paddle.concat([freqs, freqs], axis=-1)
    half = x.shape[-1] // 2
    rotated = paddle.concat([-x[:, :, :, half:], x[:, :, :, :half]], axis=-1)
    return x * paddle.cos(table) + rotated * paddle.sin(table)


def heads(x):
    return paddle.transpose(paddle.reshape(x, [0, 0, HEADS, DIM]), [0, 2, 1, 3])


def decoder(params, tokens, start, caches=None):
    """Logits [B, S, VOCAB] of tokens [B, S] at positions start.., and the caches (past keys and values per layer,
    [B, H, T, D], concatenated with the new ones)."""
    x = F.embedding(tokens, params["embed"])
    seq = paddle.shape(tokens)[1]
    query_pos = paddle.cast(paddle.arange(0, seq, dtype="int64") + start, "float32")
    new_caches = []
    for i in range(LAYERS):
        p = {name.split(".", 1)[1]: value for name, value in params.items() if name.startswith(f"l{i}.")}
        h = rms_norm(x, p["attn_norm"])
        q, k, v = (paddle.matmul(h, p[w]) for w in ("wq", "wk", "wv"))
        if "lora_q_A" in p:
            q = q + paddle.matmul(paddle.matmul(h, p["lora_q_A"]), p["lora_q_B"]) * (ALPHA / RANK)
            v = v + paddle.matmul(paddle.matmul(h, p["lora_v_A"]), p["lora_v_B"]) * (ALPHA / RANK)
        q, k, v = heads(q), heads(k), heads(v)
        q, k = rotate(q, query_pos), rotate(k, query_pos)
        if caches is not None:
            k, v = paddle.concat([caches[2 * i], k], axis=2), paddle.concat([caches[2 * i + 1], v], axis=2)
        new_caches += [k, v]
        key_pos = paddle.arange(0, paddle.shape(k)[2], dtype="float32")
        future = paddle.unsqueeze(key_pos, 0) > paddle.unsqueeze(query_pos, 1)
        scores = paddle.matmul(q, k, transpose_y=True) * (1 / math.sqrt(DIM))
        if i == 0:   # an additive -1e4 mask; the second layer masks with -inf, as masked_fill does
            scores = scores + paddle.cast(future, "float32") * -1e4
        else:
            scores = paddle.where(future, paddle.full_like(scores, float("-inf")), scores)
        attn = paddle.matmul(F.softmax(scores, axis=-1), v)
        attn = paddle.reshape(paddle.transpose(attn, [0, 2, 1, 3]), [0, 0, HIDDEN])
        x = x + paddle.matmul(attn, p["wo"])
        h = rms_norm(x, p["mlp_norm"])
        x = x + paddle.matmul(F.silu(paddle.matmul(h, p["w_gate"])) * paddle.matmul(h, p["w_up"]), p["w_down"])
    x = rms_norm(x, params["final_norm"], fused=params.get("fused", False))
    return paddle.matmul(x, params["embed"], transpose_y=True), new_caches


def batches() -> list[dict]:
    """Each batch: 2 sequences of SEQ tokens in 1..VOCAB-1 and their next tokens; the second row ends in 2 pad
    tokens (0) whose labels, and the label before them, are ignore_index -100."""
    out = []
    for _ in range(STEPS):
        text = RNG.integers(1, VOCAB, (BATCH, SEQ + 1))
        tokens, labels = text[:, :-1].copy(), text[:, 1:].copy()
        tokens[1, -2:] = 0
        labels[1, -3:] = -100
        out.append({"tokens": tokens.astype(np.int64), "labels": labels.astype(np.int64)})
    return out


def lora_programs():
    """The LoRA model with its loss (main, a copy of it before minimize, startup), Paddle's AdamW minimize appended
    to main; its loss and logits vars; the schedule the host steps."""
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 17
    with paddle.static.program_guard(main, startup):
        params = {name: paddle.static.create_parameter(
            shape, "float32", name=name, attr=paddle.ParamAttr(name=name, trainable=False))
            for name, shape in BASE.items()}
        params |= {name: paddle.static.create_parameter(
            shape, "float32", attr=paddle.ParamAttr(
                name=name, initializer=paddle.nn.initializer.Normal(0.0, 0.1) if name.endswith("_A")
                else paddle.nn.initializer.Constant(0.0))) for name, shape in ADAPTERS.items()}
        tokens = paddle.static.data("tokens", [-1, SEQ], "int64")
        labels = paddle.static.data("labels", [-1, SEQ], "int64")
        logits, _ = decoder(params, tokens, 0)
        loss = F.cross_entropy(logits, labels, ignore_index=-100)
    forward = main.clone()
    schedule = paddle.optimizer.lr.LinearWarmup(
        paddle.optimizer.lr.CosineAnnealingDecay(0.05, T_max=STEPS), warmup_steps=2, start_lr=0.0, end_lr=0.05)
    with paddle.static.program_guard(main, startup):
        paddle.optimizer.AdamW(schedule, weight_decay=0.01, apply_decay_param_fun=lambda name: name.endswith("_A"),
                               grad_clip=paddle.nn.ClipGradByGlobalNorm(1.0)).minimize(loss)
    return main, forward, startup, loss, logits, schedule


def train(main, startup, loss, schedule, base: dict, data: list) -> tuple[list, list, dict, dict]:
    """Paddle's run: the startup program, the pretrained base put in, a step per batch; the losses, the rates, the
    adapters before and after."""
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    scope = paddle.static.global_scope()
    for name, value in base.items():
        scope.var(name).get_tensor().set(value, paddle.CPUPlace())
    initial = {name: np.array(scope.var(name).get_tensor()) for name in ADAPTERS}
    losses, rates = [], []
    for feed in data:
        rates.append(schedule())
        losses.append(float(exe.run(main, feed=feed, fetch_list=[loss])[0]))
        schedule.step()
    trained = {name: np.array(scope.var(name).get_tensor()) for name in ADAPTERS}
    assert all(np.array_equal(np.array(scope.var(name).get_tensor()), value) for name, value in base.items())
    return losses, rates, initial, trained


def legacy(out: Path) -> None:
    paddle_legacy_shim.install()
    paddle.enable_static()
    base = pretrained()
    data = batches()
    main, forward, startup, loss, logits, schedule = lora_programs()
    losses, rates, initial, trained = train(main, startup, loss, schedule, base, data)
    exe = paddle.static.Executor(paddle.CPUPlace())

    write_gz(out / "lora.pb", without_callstacks(forward))
    write_gz(out / "startup.pb", without_callstacks(startup))
    np.savez(out / "base.npz", **base)
    np.savez_compressed(out / "adapters.npz", **trained,
                        **{f"{name}@initial": value for name, value in initial.items()})
    np.savez(out / "data.npz", **{key: np.concatenate([b[key] for b in data]) for key in ("tokens", "labels")})
    merged = merge(base, trained)
    tokens_out, step_names, loop_tokens = generation(out, merged, exe)
    meta = {"loss": loss.name, "logits": logits.name, "losses": losses, "learning_rates": rates,
            "generated": tokens_out.tolist(), "step": step_names, "generate": loop_tokens}
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


def merge(base: dict, adapters: dict) -> dict:
    """W + A B * alpha / rank for the q and v projections, in float64 rounded once to float32."""
    merged = dict(base)
    for i in range(LAYERS):
        for proj in "qv":
            a, b = (adapters[f"l{i}.lora_{proj}_{m}"].astype(np.float64) for m in "AB")
            merged[f"l{i}.w{proj}"] = (base[f"l{i}.w{proj}"] + a @ b * (ALPHA / RANK)).astype(np.float32)
    return merged


def generation(out: Path, merged: dict, exe) -> np.ndarray:
    """step.pb (the merged model after the tokens its caches hold) run greedily by Paddle's executor: a
    prefill of the PROMPT tokens over empty caches, then NEW - 1 decoding steps of one token each."""
    program, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(program, startup):
        params = {name: paddle.static.create_parameter(shape, "float32", name=name) for name, shape in BASE.items()}
        tokens = paddle.static.data("tokens", [-1, -1], "int64")
        caches = [paddle.static.data(f"cache_{kind}{i}", [-1, HEADS, -1, DIM], "float32")
                  for i in range(LAYERS) for kind in "kv"]
        start = paddle.cast(paddle.shape(caches[0])[2:3], "int64")   # the tokens so far: the caches' length
        logits, new_caches = decoder(params, tokens, start, caches)
        next_token = paddle.argmax(logits[:, -1, :], axis=-1, keepdim=True)
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        for name, value in merged.items():
            scope.var(name).get_tensor().set(value, paddle.CPUPlace())
        prompt = RNG.integers(1, VOCAB, (BATCH, PROMPT)).astype(np.int64)
        state = {f"cache_{kind}{i}": np.zeros((BATCH, HEADS, 0, DIM), np.float32)
                 for i in range(LAYERS) for kind in "kv"}
        feed_tokens, generated = prompt, []
        for step in range(NEW):
            fetched = exe.run(program, feed={"tokens": feed_tokens, **state},
                              fetch_list=[next_token, logits, *new_caches])
            if step == 0:
                prefill_logits = fetched[1]
            state = dict(zip(state, fetched[2:]))
            feed_tokens = fetched[0]
            generated.append(feed_tokens[:, 0])
    write_gz(out / "step.pb", without_callstacks(program))
    names = {"next_token": next_token.name, "logits": logits.name, "caches": [c.name for c in new_caches]}
    tokens_out = np.stack(generated, 1)
    loop_tokens, looped = generate_loop(out, merged, prompt, exe)
    assert np.array_equal(looped, tokens_out)
    np.savez_compressed(out / "generation.npz", prompt=prompt, tokens=tokens_out, prefill_logits=prefill_logits)
    return tokens_out, names, loop_tokens


def generate_loop(out: Path, merged: dict, prompt: np.ndarray, exe) -> np.ndarray:
    """Greedy generation as one program (generate.pb): the prefill, then a while_loop of NEW - 1 decoding steps whose
    key/value caches grow by a position each iteration; Paddle's tokens [B, NEW]."""
    program, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(program, startup):
        params = {name: paddle.static.create_parameter(shape, "float32", name=name) for name, shape in BASE.items()}
        tokens = paddle.static.data("prompt", [-1, -1], "int64")
        logits, caches = decoder(params, tokens, 0)
        first = paddle.argmax(logits[:, -1, :], axis=-1, keepdim=True)
        step = paddle.full([1], 0, "int64")
        position = paddle.shape(tokens)[1:2].astype("int64")

        def more(step, position, generated, *caches):
            return step < NEW - 1

        def decode(step, position, generated, *caches):
            logits, caches = decoder(params, generated[:, -1:], position, list(caches))
            token = paddle.argmax(logits[:, -1, :], axis=-1, keepdim=True)
            return [step + 1, position + 1, paddle.concat([generated, token], axis=1), *caches]

        generated = paddle.static.nn.while_loop(more, decode, [step, position, first, *caches])[2]
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        for name, value in merged.items():
            scope.var(name).get_tensor().set(value, paddle.CPUPlace())
        (result,) = exe.run(program, feed={"prompt": prompt}, fetch_list=[generated])
    write_gz(out / "generate.pb", without_callstacks(program))
    return generated.name, result


if __name__ == "__main__":
    Path(sys.argv[1]).mkdir(parents=True, exist_ok=True)
    legacy(Path(sys.argv[1]))
