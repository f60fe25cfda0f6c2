"""The language-model pretraining engineer's programs of docs/tools.md's 'A language-model pretraining engineer's
week', written with Paddle 3.3.1's layers in legacy static mode (FLAGS_enable_pir_api=0): a tiny GPT (vocabulary 24,
pad 0; token and learned position embeddings; 2 pre-LN decoder blocks of nn.MultiHeadAttention with a causal -inf mask
from paddle.triu, a GELU MLP and dropout 0.1; a final LayerNorm; logits by matmul with transpose_y of the token
embedding's weight: tied), trained on sequences of a noisy counting language, right-padded.

- gpt/: forward.pb (loss: F.cross_entropy(label_smoothing=0.1, ignore_index=0)), train.pb (Paddle's own
  AdamW(LinearWarmup(CosineAnnealingDecay(0.01, T_max=20), 4, 0, 0.01), weight_decay=0.1, apply_decay_param_fun:
  not norms and biases, ClipGradByGlobalNorm(1.0)) minimize, the scheduler stepped each step), startup.pb,
  init.npz, data.npz (tokens, labels), trained.npz; paddle.seed(41) before the startup: dropout draws on from there.
- eval.pb: the same model without label smoothing or dropout (clone for_test); eval.npz: Paddle's summed
  negative log-likelihood and token count over the test set (perplexity = exp(sum / count)).
- gm/: the same model trained by GradientMergeOptimizer(AdamW, k_steps=2, avg=True) (Paddle's gradient
  accumulation over micro-batches), dropout off, from gpt/init.npz: train.pb, startup.pb, its losses, trained.npz.
- step.pb: the model's logits at the last position of fed tokens, and paddle.topk(5) of them; generation.npz:
  greedy tokens and top-k tokens (numpy's draws from the top-5 softmax, the draws' uniforms kept) Paddle's executor
  gives by running step.pb token by token from the trained weights.
- cls/: fine-tuning: the pretrained trunk (token embedding frozen, trainable=False) with a linear head on the last
  non-pad token's feature (gather_nd), Adam(3e-3), 6 steps: forward.pb, train.pb, startup.pb, init.npz (the head),
  data.npz, trained.npz.
- amp/: the pretraining program under paddle.static.amp.decorate at O1 and O2 (float16, dynamic loss scaling) as a
  CUDA build writes it (O1.pb, O1_startup.pb, O2.pb, O2_startup.pb).
The PIR half (tools/paddle_user_week41_pir.py): gpt.json / gpt.pdiparams, the trained GPT by paddle.jit.save
(dygraph, PIR) and the Predictor's logits on the prompts (predictor.npz).

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week41.py tests/data/paddle/user_week41
"""

import json
from pathlib import Path

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle_programs import pir_half, script_main, without_callstacks, write_gz

VOCAB, HIDDEN, HEADS, FFN, LAYERS, MAX_LEN, DROPOUT = 24, 16, 2, 32, 2, 12, 0.1
SEQ, BATCH, STEPS, TEST, PAD = 8, 4, 24, 12, 0
PROMPTS, NEW, TOP_K = 3, 5, 5
SCHEDULE = "LinearWarmup(learning_rate=CosineAnnealingDecay(learning_rate=0.01, T_max=20), warmup_steps=4, " \
           "start_lr=0.0, end_lr=0.01)"
RNG = np.random.default_rng(41)


def sequences(count: int) -> dict:
    """Counting sequences (each token the last plus 1 or 2, wrapping within 1..23), of 5 to 9 tokens, right-padded
    with 0: tokens are the first SEQ, labels the next SEQ (pad where the sequence ended)."""
    rows = np.zeros((count, SEQ + 1), np.int64)
    for row in rows:
        length = RNG.integers(5, SEQ + 2)
        value = RNG.integers(1, VOCAB)
        for index in range(length):
            row[index] = value
            value = (value - 1 + RNG.choice([1, 2], p=[0.8, 0.2])) % (VOCAB - 1) + 1
    return {"tokens": rows[:, :-1].copy(), "labels": rows[:, 1:].copy()}


class Block(nn.Layer):
    """A pre-LN decoder block: x + drop(attn(ln1 x, mask)), then x + drop(mlp(ln2 x)) with a GELU MLP."""

    def __init__(self, dropout: float):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(HIDDEN), nn.LayerNorm(HIDDEN)
        self.attn = nn.MultiHeadAttention(HIDDEN, HEADS, dropout=dropout)
        self.mlp = nn.Sequential(nn.Linear(HIDDEN, FFN), nn.GELU(), nn.Linear(FFN, HIDDEN), nn.Dropout(dropout))
        self.drop = nn.Dropout(dropout)

    def forward(self, x, mask):
        normed = self.ln1(x)
        x = x + self.drop(self.attn(normed, normed, normed, attn_mask=mask))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Layer):
    """Token and learned position embeddings, pre-LN blocks under a causal mask, a final LayerNorm, and the output
    projection tied to the token embedding; forward gives the hidden states and the logits."""

    def __init__(self, dropout: float = DROPOUT, frozen_embedding: bool = False):
        super().__init__()
        attr = paddle.ParamAttr(trainable=False) if frozen_embedding else None
        self.tok = nn.Embedding(VOCAB, HIDDEN, weight_attr=attr)
        self.pos = nn.Embedding(MAX_LEN, HIDDEN)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.LayerList([Block(dropout) for _ in range(LAYERS)])
        self.ln_f = nn.LayerNorm(HIDDEN)

    def forward(self, tokens):
        length = paddle.shape(tokens)[1]
        positions = paddle.arange(length, dtype="int64").unsqueeze(0)
        mask = paddle.triu(paddle.full([length, length], float("-inf"), "float32"), diagonal=1)
        x = self.drop(self.tok(tokens) + self.pos(positions))
        for block in self.blocks:
            x = block(x, mask)
        hidden = self.ln_f(x)
        return hidden, paddle.matmul(hidden, self.tok.weight, transpose_y=True)


def no_decay(name: str) -> bool:
    return "layer_norm" in name or ".b_" in name


def adamw(schedule):
    return paddle.optimizer.AdamW(schedule, weight_decay=0.1, grad_clip=nn.ClipGradByGlobalNorm(1.0),
                                  apply_decay_param_fun=lambda name: not no_decay(name))


def schedule():
    return paddle.optimizer.lr.LinearWarmup(paddle.optimizer.lr.CosineAnnealingDecay(1e-2, T_max=20), 4, 0.0, 1e-2)


def values(scope, names) -> dict:
    return {n: np.array(scope.var(n).get_tensor()) for n in names}


def pretrain(out: Path, exe, data: dict, test: dict) -> dict:
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup), paddle.utils.unique_name.guard():
        tokens = paddle.static.data("tokens", [-1, -1], "int64")
        labels = paddle.static.data("labels", [-1, -1], "int64")
        model = GPT()
        hidden, logits = model(tokens)
        loss = F.cross_entropy(logits, labels, ignore_index=PAD, label_smoothing=0.1)
        forward = main.clone()
        evaluation = main.clone(for_test=True)
        opt = adamw(schedule())
        opt.minimize(loss)
    with paddle.static.program_guard(evaluation, paddle.static.Program()):
        nll = F.cross_entropy(evaluation.global_block().var(logits.name), evaluation.global_block().var(labels.name),
                              ignore_index=PAD, reduction="sum")
        count = paddle.sum(paddle.cast(evaluation.global_block().var(labels.name) != PAD, "float32"))
        mean_nll = nll / count
    folder = out / "gpt"
    folder.mkdir(parents=True, exist_ok=True)
    scope = paddle.static.Scope()
    names = [p.name for p in main.all_parameters()]
    with paddle.static.scope_guard(scope):
        paddle.seed(41)
        exe.run(startup)
        np.savez_compressed(folder / "init.npz", **values(scope, names))
        losses, rates = [], []
        for step in range(STEPS):
            feed = {k: v[step * BATCH:(step + 1) * BATCH] for k, v in data.items()}
            rates.append(opt.get_lr())
            losses.append(float(exe.run(main, feed=feed, fetch_list=[loss])[0]))
            opt._learning_rate.step()
        trained = values(scope, names)
        np.savez_compressed(folder / "trained.npz", **trained)
        test_nll, test_count, test_mean = exe.run(evaluation, feed=test, fetch_list=[nll, count, mean_nll])
        batch_means = [float(exe.run(evaluation, feed={k: v[i:i + 4] for k, v in test.items()},
                                     fetch_list=[mean_nll])[0]) for i in range(0, TEST, 4)]
    np.savez_compressed(folder / "data.npz", **data)
    np.savez_compressed(out / "test.npz", **test)
    np.savez_compressed(out / "eval.npz", nll=test_nll, count=test_count, mean=test_mean,
                        batch_means=np.array(batch_means))
    for name, program in [("forward", forward), ("train", main), ("startup", startup)]:
        write_gz(folder / f"{name}.pb", without_callstacks(program))
    write_gz(out / "eval.pb", without_callstacks(evaluation))
    return {"loss": loss.name, "logits": logits.name, "losses": losses, "rates": rates, "params": names,
            "eval_mean": mean_nll.name, "eval_nll": nll.name, "perplexity": float(np.exp(test_nll / test_count))}


def gradient_merge(out: Path, exe, data: dict, init: dict) -> dict:
    """The same model (dropout off) under GradientMergeOptimizer(k_steps=2, avg=True): an update every 2 runs of a
    micro-batch of 2, from the pretraining's initial weights."""
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup), paddle.utils.unique_name.guard():
        tokens = paddle.static.data("tokens", [-1, -1], "int64")
        labels = paddle.static.data("labels", [-1, -1], "int64")
        _, logits = GPT(dropout=0.0)(tokens)
        loss = F.cross_entropy(logits, labels, ignore_index=PAD, label_smoothing=0.1)
        forward = main.clone()
        opt = paddle.incubate.optimizer.GradientMergeOptimizer(
            paddle.optimizer.AdamW(1e-3, weight_decay=0.1, apply_decay_param_fun=lambda name: not no_decay(name)),
            k_steps=2, avg=True)
        opt.minimize(loss)
    folder = out / "gm"
    folder.mkdir(parents=True, exist_ok=True)
    scope = paddle.static.Scope()
    names = [p.name for p in main.all_parameters()]
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        for name, value in zip(names, init.values()):
            scope.var(name).get_tensor().set(value, paddle.CPUPlace())
        micro = BATCH // 2
        losses = [float(exe.run(main, feed={k: v[i * micro:(i + 1) * micro] for k, v in data.items()},
                                fetch_list=[loss])[0]) for i in range(12)]
        np.savez_compressed(folder / "trained.npz", **values(scope, names))
    for name, program in [("forward", forward), ("train", main), ("startup", startup)]:
        write_gz(folder / f"{name}.pb", without_callstacks(program))
    return {"losses": losses, "params": names}


def generation(out: Path, exe, trained: dict) -> dict:
    """step.pb: the last position's logits and their top 5; Paddle's greedy and top-k tokens, fed token by token."""
    main = paddle.static.Program()
    with paddle.static.program_guard(main, paddle.static.Program()), paddle.utils.unique_name.guard():
        tokens = paddle.static.data("tokens", [-1, -1], "int64")
        _, logits = GPT(dropout=0.0)(tokens)
        last = logits[:, -1, :]
        top_values, top_indices = paddle.topk(last, TOP_K)
    names = [p.name for p in main.all_parameters()]
    scope = paddle.static.Scope()
    prompts = np.array([[3, 4, 5], [10, 11, 13], [20, 21, 22]], np.int64)
    uniforms = RNG.uniform(size=(NEW, len(prompts)))
    with paddle.static.scope_guard(scope):
        for name, value in zip(names, trained.values()):
            scope.var(name).get_tensor().set(value, paddle.CPUPlace())
        greedy, sampled = prompts.copy(), prompts.copy()
        for step in range(NEW):
            (logit,) = exe.run(main, feed={"tokens": greedy}, fetch_list=[last])
            greedy = np.concatenate([greedy, logit.argmax(-1)[:, None]], 1)
            values_k, indices_k = exe.run(main, feed={"tokens": sampled}, fetch_list=[top_values, top_indices])
            probs = np.exp(values_k - values_k.max(-1, keepdims=True))
            cdf = np.cumsum(probs / probs.sum(-1, keepdims=True), -1)
            picks = (uniforms[step][:, None] > cdf).sum(-1).clip(0, TOP_K - 1)
            sampled = np.concatenate([sampled, indices_k[np.arange(len(prompts)), picks][:, None]], 1)
        (prompt_logits,) = exe.run(main, feed={"tokens": prompts}, fetch_list=[logits])
    write_gz(out / "step.pb", without_callstacks(main))
    np.savez_compressed(out / "generation.npz", prompts=prompts, greedy=greedy, sampled=sampled, uniforms=uniforms,
             prompt_logits=prompt_logits)
    return {"step_logits": logits.name, "last": last.name, "top_values": top_values.name,
            "top_indices": top_indices.name}


def finetune(out: Path, exe, trained: dict) -> dict:
    """A classifier on the pretrained trunk: is the sequence's step always 1 (class 1) or not (0), from the last
    non-pad token's feature; the token embedding frozen; Adam(3e-3), 6 steps of 4."""
    data = sequences(24)
    tokens = data["tokens"]
    diffs = np.diff(tokens, axis=1)
    valid = (tokens[:, 1:] != PAD) & (tokens[:, :-1] != PAD)
    data = {"tokens": tokens, "lengths": (tokens != PAD).sum(1).astype(np.int64),
            "label": np.array([[int(np.all((d[v] == 1) | (d[v] == -22)))] for d, v in zip(diffs, valid)], np.int64)}
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup), paddle.utils.unique_name.guard():
        tokens_var = paddle.static.data("tokens", [-1, -1], "int64")
        lengths = paddle.static.data("lengths", [-1], "int64")
        label = paddle.static.data("label", [-1, 1], "int64")
        hidden, _ = GPT(dropout=0.0, frozen_embedding=True)(tokens_var)
        rows = paddle.arange(paddle.shape(tokens_var)[0], dtype="int64")
        feature = paddle.gather_nd(hidden, paddle.stack([rows, lengths - 1], axis=1))
        logits = nn.Linear(HIDDEN, 2)(feature)
        loss = F.cross_entropy(logits, label)
        forward = main.clone()
        paddle.optimizer.Adam(3e-3).minimize(loss)
    folder = out / "cls"
    folder.mkdir(parents=True, exist_ok=True)
    names = [p.name for p in main.all_parameters()]
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        paddle.seed(41)
        exe.run(startup)
        for name, value in zip(names, trained.values()):
            scope.var(name).get_tensor().set(value, paddle.CPUPlace())
        np.savez_compressed(folder / "init.npz", **values(scope, names[len(trained):]))
        losses = [float(exe.run(main, feed={k: v[s * 4:(s + 1) * 4] for k, v in data.items()},
                                fetch_list=[loss])[0]) for s in range(6)]
        np.savez_compressed(folder / "trained.npz", **values(scope, names))
    np.savez_compressed(folder / "data.npz", **data)
    for name, program in [("forward", forward), ("train", main), ("startup", startup)]:
        write_gz(folder / f"{name}.pb", without_callstacks(program))
    return {"losses": losses, "params": names, "frozen": names[0]}


def amp_programs(out: Path) -> None:
    """amp/<level>.pb, <level>_startup.pb: the pretraining program under paddle.static.amp.decorate(AdamW, level,
    float16, dynamic loss scaling) as a CUDA build writes it (tools/paddle_gpu_amp_static.py's CudaBuild; a CPU
    build casts nothing, and cannot run the float16 kernels)."""
    from paddle.static import amp
    from paddle_gpu_amp_static import CudaBuild
    folder = out / "amp"
    folder.mkdir(exist_ok=True)
    for level in ("O1", "O2"):
        main, startup = paddle.static.Program(), paddle.static.Program()
        with paddle.static.program_guard(main, startup), paddle.utils.unique_name.guard():
            tokens = paddle.static.data("tokens", [-1, -1], "int64")
            labels = paddle.static.data("labels", [-1, -1], "int64")
            _, logits = GPT()(tokens)
            loss = F.cross_entropy(logits, labels, ignore_index=PAD, label_smoothing=0.1)
            with CudaBuild():
                amp.decorate(adamw(schedule()), level=level, dtype="float16").minimize(loss)
        write_gz(folder / f"{level}.pb", without_callstacks(main))
        write_gz(folder / f"{level}_startup.pb", without_callstacks(startup))


def main(out: Path) -> None:
    import paddle_legacy_shim
    paddle_legacy_shim.install()
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    data, test = sequences(BATCH * STEPS), sequences(TEST)
    meta = {"gpt": pretrain(out, exe, data, test)}
    init = dict(np.load(out / "gpt" / "init.npz"))
    trained = dict(np.load(out / "gpt" / "trained.npz"))
    meta["gm"] = gradient_merge(out, exe, data, {n: init[n] for n in meta["gpt"]["params"]})
    meta["step"] = generation(out, exe, {n: trained[n] for n in meta["gpt"]["params"]})
    meta["cls"] = finetune(out, exe, {n: trained[n] for n in meta["gpt"]["params"]})
    meta["schedule"] = SCHEDULE
    amp_programs(out)
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    pir_half(__file__, out)


if __name__ == "__main__":
    from paddle_user_week41_pir import main_pir

    script_main(main, main_pir)
