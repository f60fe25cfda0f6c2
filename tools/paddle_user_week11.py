"""The sequence modeller's models of docs/tools.md's 'A sequence modeller's week', built by Paddle 3.3.1's legacy
static API (the C-only APIs through tools/paddle_legacy_shim.py), each trained STEPS steps by Paddle's executor:

- forecaster: a 2-layer `nn.LSTM` given `sequence_length`, teacher-forced (the input is the previous step's true
  value), a Linear head, MSE masked by `sequence_mask`; Adam with `ClipGradByGlobalNorm(1.0)`; each step's batch of
  another T (12, 20, 7, 16).
- ctc: a conv1d + `nn.GRU` acoustic model under `F.ctc_loss` (warpctc), Adam with `ClipGradByNorm(1.0)`.
- seq2seq: a GRU encoder-decoder trained with teacher forcing (the decoder's GRU starts from the encoder's state),
  cross-entropy, Adam with `ClipGradByGlobalNorm(1.0)`; T 6, 9, 4.
- decoder: a GRU encoder and a `GRUCell` decoder decoding greedily in `paddle.static.nn.while_loop` (inference only).

Writes CASE/forward.pb (the program before `minimize`), CASE/init.npz (Paddle's startup values of the parameters),
CASE/batches.npz, CASE/meta.json (loss name, Paddle's losses; the decoder's fetch names) and decoder/out.npz.

    FLAGS_enable_pir_api=0 /path/to/paddle/python tools/paddle_user_week11.py tests/data/paddle/user_week11
"""

import json
import os
import sys

import numpy as np
import paddle
import paddle.nn.functional as F
import paddle_legacy_shim
from paddle import nn

RNG = np.random.default_rng(11)
BATCH = 4


def write(path, program):
    for block in program.blocks:   # the Python call stacks are most of a program's bytes
        for op in block.ops:
            op.desc.remove_attr("op_callstack")
    with open(path, "wb") as out:
        out.write(program.desc.serialize_to_string())


def forecaster():
    x = paddle.static.data("x", [-1, -1, 1], "float32")
    y = paddle.static.data("y", [-1, -1, 1], "float32")
    lengths = paddle.static.data("lengths", [-1], "int64")
    out, _ = nn.LSTM(1, 16, num_layers=2)(x, sequence_length=lengths)
    pred = nn.Linear(16, 1)(out)
    mask = paddle.unsqueeze(paddle.cast(paddle.nn.functional.sequence_mask(lengths, maxlen=paddle.shape(x)[1]),
                                        "float32"), -1)
    loss = paddle.mean(paddle.square(pred - y) * mask)
    return loss, paddle.optimizer.Adam(0.01, grad_clip=nn.ClipGradByGlobalNorm(1.0))


def forecaster_batch(steps):
    series = np.sin(np.linspace(0, 3, steps + 1)[None, :] * RNG.uniform(1, 4, (BATCH, 1)))
    lengths = RNG.integers(steps // 2, steps + 1, BATCH)
    lengths[0] = steps
    return {"x": series[:, :-1, None].astype(np.float32), "y": series[:, 1:, None].astype(np.float32),
            "lengths": lengths.astype(np.int64)}


def ctc():
    feats = paddle.static.data("feats", [-1, 8, -1], "float32")   # [B, mel, T]
    labels = paddle.static.data("labels", [-1, 5], "int32")
    feat_lens = paddle.static.data("feat_lens", [-1], "int64")
    label_lens = paddle.static.data("label_lens", [-1], "int64")
    conv = F.relu(nn.Conv1D(8, 12, 3, padding=1)(feats))
    hidden, _ = nn.GRU(12, 16)(paddle.transpose(conv, [0, 2, 1]), sequence_length=feat_lens)
    logits = paddle.transpose(nn.Linear(16, 7)(hidden), [1, 0, 2])   # [T, B, classes], blank 0
    loss = F.ctc_loss(logits, labels, feat_lens, label_lens, blank=0, reduction="mean")
    return loss, paddle.optimizer.Adam(0.01, grad_clip=nn.ClipGradByNorm(1.0))


def ctc_batch(steps):
    label_lens = RNG.integers(2, 6, BATCH)
    return {"feats": RNG.standard_normal((BATCH, 8, steps)).astype(np.float32),
            "labels": RNG.integers(1, 7, (BATCH, 5)).astype(np.int32),
            "feat_lens": RNG.integers(steps - 3, steps + 1, BATCH).astype(np.int64),
            "label_lens": label_lens.astype(np.int64)}


def seq2seq(vocab=10):
    src = paddle.static.data("src", [-1, -1], "int64")
    tgt_in = paddle.static.data("tgt_in", [-1, -1], "int64")   # BOS then the target: teacher forcing
    tgt_out = paddle.static.data("tgt_out", [-1, -1, 1], "int64")
    embed = nn.Embedding(vocab, 8)
    _, state = nn.GRU(8, 16)(embed(src))
    decoded, _ = nn.GRU(8, 16)(embed(tgt_in), state)
    loss = F.cross_entropy(nn.Linear(16, vocab)(decoded), tgt_out)
    return loss, paddle.optimizer.Adam(0.01, grad_clip=nn.ClipGradByGlobalNorm(1.0))


def seq2seq_batch(steps, vocab=10):
    target = RNG.integers(2, vocab, (BATCH, steps))
    return {"src": RNG.integers(2, vocab, (BATCH, steps + 2)).astype(np.int64),
            "tgt_in": np.concatenate([np.ones((BATCH, 1)), target[:, :-1]], axis=1).astype(np.int64),
            "tgt_out": target[..., None].astype(np.int64)}


def trained_case(target, name, build, make_batch, lengths):
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        loss, optimizer = build()
        forward = main.clone()
        optimizer.minimize(loss)
    os.makedirs(os.path.join(target, name), exist_ok=True)
    write(os.path.join(target, name, "forward.pb"), forward)
    scope = paddle.static.Scope()
    exe = paddle.static.Executor(paddle.CPUPlace())
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        params = {p.name: np.array(scope.find_var(p.name).get_tensor()) for p in main.all_parameters()}
        batches = [make_batch(steps) for steps in lengths]
        losses = [float(np.asarray(exe.run(main, feed=batch, fetch_list=[loss])[0]).reshape(-1)[0])
                  for batch in batches]
    np.savez(os.path.join(target, name, "init.npz"), **params)
    np.savez(os.path.join(target, name, "batches.npz"),
             **{f"{key}{step}": value for step, batch in enumerate(batches) for key, value in batch.items()})
    meta = {"loss": loss.name, "losses": losses, "feeds": sorted(batches[0])}
    with open(os.path.join(target, name, "meta.json"), "w") as out:
        json.dump(meta, out, indent=1)
    print(name, losses)


def decoder(target, max_len=6, vocab=10, hidden=16):
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        src = paddle.static.data("src", [-1, -1], "int64")
        embed = nn.Embedding(vocab, 8)
        _, state = nn.GRU(8, hidden)(embed(src))
        cell, head = nn.GRUCell(8, hidden), nn.Linear(hidden, vocab)
        token = paddle.full_like(src[:, :1], 1)   # BOS = 1
        step = paddle.full([1], 0, "int64")
        tokens = paddle.tensor.create_array("int64")

        def go_on(step, token, state, tokens):
            return paddle.less_than(step, paddle.full([1], max_len, "int64"))

        def body(step, token, state, tokens):
            emitted, new_state = cell(paddle.squeeze(embed(token), 1), state)
            chosen = paddle.unsqueeze(paddle.argmax(head(emitted), axis=-1), 1)
            paddle.tensor.array_write(chosen, step, tokens)
            return [step + 1, chosen, new_state, tokens]

        _, _, final, tokens = paddle.static.nn.while_loop(go_on, body, [step, token, state[0], tokens])
        decoded, _ = paddle.tensor.manipulation.tensor_array_to_tensor(tokens, axis=1)
    os.makedirs(os.path.join(target, "decoder"), exist_ok=True)
    write(os.path.join(target, "decoder", "forward.pb"), main)
    scope = paddle.static.Scope()
    exe = paddle.static.Executor(paddle.CPUPlace())
    src_ids = RNG.integers(2, vocab, (3, 5)).astype(np.int64)
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        params = {p.name: np.array(scope.find_var(p.name).get_tensor()) for p in main.all_parameters()}
        out, last = exe.run(main, feed={"src": src_ids}, fetch_list=[decoded, final])
    np.savez(os.path.join(target, "decoder", "init.npz"), **params)
    np.savez(os.path.join(target, "decoder", "out.npz"), src=src_ids, decoded=out, final=last)
    with open(os.path.join(target, "decoder", "meta.json"), "w") as out_file:
        json.dump({"decoded": decoded.name, "final": final.name}, out_file, indent=1)
    print("decoder", out.tolist())


def main(target):
    paddle.enable_static()
    paddle_legacy_shim.install()
    paddle.seed(11)
    trained_case(target, "forecaster", forecaster, forecaster_batch, [12, 20, 7, 16])
    trained_case(target, "ctc", ctc, ctc_batch, [30, 24, 36])
    decoder(target)
    trained_case(target, "seq2seq", seq2seq, seq2seq_batch, [6, 9, 4])   # last: the cases above keep their draws


if __name__ == "__main__":
    main(sys.argv[1])
