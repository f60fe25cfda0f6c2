"""The recurrent-tagger engineer's programs of docs/tools.md's 'A recurrent-tagger engineer's week', written with
Paddle 3.3.1's layers in legacy static mode (FLAGS_enable_pir_api=0): token tagging of padded sentences.

- gru.pb: an Embedding, a 2-layer BiGRU (nn.GRU direction="bidirect", num_layers=2, given sequence_length), tags by
  Linear and a token-level masked cross-entropy (the padded steps' losses multiplied by 0, the sum divided by the
  number of real tokens); gru_train.pb is Paddle's own training program of it: AdamW (lr 0.01, weight decay 0.01)
  with ClipGradByGlobalNorm(1.0), 4 steps of 4 sentences. The GRU's startup coalesces its 16 cell tensors into the
  flat buffer gru_0.w_0, whose memory they share: after the steps it holds their trained values (checked here).
- transformer.pb: word and positional Embeddings, nn.TransformerEncoder (2 layers, d_model 16, 2 heads, feed-forward
  32, Paddle's dropout 0.1, its ops seeded by the program's random_seed) given a padding mask (src_mask of shape
  [B, 1, 1, T], False at the padded keys), the same loss, optimizer, clip and steps.
- gru_dropout.pb: the BiGRU with dropout 0.1 between its layers (the rnn op draws its mask from paddle.seed(5)'s
  stream), the same steps: its losses and trained flat buffer.
- gru.pdparams, gru.pdopt: paddle.static.save of gru_train.pb after the steps (the flat buffer among them); the
  same steps run again from there give resumed_losses and gru_resumed.npz (the flat buffer, the
  Linear's weight and the Embedding).
- tagger_pir.json / .pdiparams: the trained BiGRU tagger in dygraph (a second interpreter, PIR mode) with the argmax
  tags, saved by paddle.jit.save and run by the Predictor.

Written (programs gzipped): gru*.pb, transformer*.pb, data.npz, gru_trained.npz, transformer_trained.npz (every
parameter after the steps), paddle_*.npz, meta.json (losses per step, names, the flat buffer's layout).

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week33.py tests/data/paddle/user_week33
"""

import json
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
import paddle_legacy_shim
from paddle_programs import gzip_file, pir_half, predict, script_main, without_callstacks, write_gz

VOCAB, LENGTH, TAGS, SENTENCES, BATCH, STEPS, HIDDEN = 20, 6, 5, 16, 4, 4, 8
RNG = np.random.default_rng(33)


def sentences() -> dict:
    """Padded sentences tagged by a rule needing context: a word's tag is its value mod 4, plus 1 after an even
    word (so 0..4); padding is word 0, tag 0 (masked out of the loss)."""
    lengths = RNG.integers(2, LENGTH + 1, SENTENCES)
    lengths[0] = LENGTH
    words = RNG.integers(1, VOCAB, (SENTENCES, LENGTH))
    labels = np.zeros((SENTENCES, LENGTH), np.int64)
    for words_row, labels_row, length in zip(words, labels, lengths):
        words_row[length:] = 0
        for t in range(length):
            labels_row[t] = words_row[t] % 4 + (t > 0 and words_row[t - 1] % 2 == 0)
    return {"words": words.astype(np.int64), "lengths": lengths.astype(np.int64), "labels": labels}


def masked_loss(logits, labels, lengths):
    mask = paddle.cast(paddle.arange(LENGTH, dtype="int64").unsqueeze(0) < lengths.unsqueeze(1), "float32")
    losses = F.cross_entropy(logits, labels.unsqueeze(-1), reduction="none").squeeze(-1)
    return paddle.sum(losses * mask) / paddle.sum(mask)


def gru_logits(words, lengths, dropout=0.0):
    embedded = paddle.nn.Embedding(VOCAB, HIDDEN)(words)
    gru = paddle.nn.GRU(HIDDEN, HIDDEN, num_layers=2, direction="bidirect", dropout=dropout)
    hidden, _ = gru(embedded, sequence_length=lengths)
    return paddle.nn.Linear(2 * HIDDEN, TAGS)(hidden)


def transformer_logits(words, lengths):
    positions = paddle.arange(LENGTH, dtype="int64").unsqueeze(0)
    embedded = paddle.nn.Embedding(VOCAB, 16)(words) + paddle.nn.Embedding(LENGTH, 16)(positions)
    keep = positions < lengths.unsqueeze(1)                       # [B, T]: False at the padded keys
    layer = paddle.nn.TransformerEncoderLayer(16, 2, 32)   # Paddle's dropout 0.1, its ops seeded by the program
    encoded = paddle.nn.TransformerEncoder(layer, 2)(embedded, src_mask=keep.unsqueeze(1).unsqueeze(1))
    return paddle.nn.Linear(16, TAGS)(encoded)


def programs(logits_of):
    """(forward, training, startup, loss name, logits name) of one tagger, its names counted from 0."""
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        main.random_seed = startup.random_seed = 33
        words = paddle.static.data("words", [-1, LENGTH], "int64")
        lengths = paddle.static.data("lengths", [-1], "int64")
        labels = paddle.static.data("labels", [-1, LENGTH], "int64")
        logits = logits_of(words, lengths)
        loss = masked_loss(logits, labels, lengths)
        forward = main.clone()
        paddle.optimizer.AdamW(0.01, weight_decay=0.01,
                               grad_clip=paddle.nn.ClipGradByGlobalNorm(1.0)).minimize(loss)
    return forward, main, startup, loss.name, logits.name


def train(exe, name, logits_of, data, out, seed=None):
    """Paddle's steps of one tagger: its programs, losses per step and parameters after them (of the BiGRU with
    dropout, whose rnn op draws from paddle.seed(seed)'s stream, the forward and startup programs and the buffer)."""
    forward, main, startup, loss, logits = programs(logits_of)
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        if seed is not None:
            paddle.seed(seed)
        exe.run(startup)
        initial = {p.name: np.array(scope.var(p.name).get_tensor()) for p in main.all_parameters()}
        losses = []
        for step in range(STEPS):
            feed = {key: value[step * BATCH:(step + 1) * BATCH] for key, value in data.items()}
            losses.append(float(exe.run(main, feed=feed, fetch_list=[loss])[0]))
        trained = {p.name: np.array(scope.var(p.name).get_tensor()) for p in main.all_parameters()}
        test = forward.clone(for_test=True)
        outputs = dict(zip(["loss", "logits"], exe.run(test, feed=data, fetch_list=[loss, logits])))
        resumed = resume(exe, main, loss, data, out) if name == "gru" else None
    fused = [op for op in startup.global_block().ops if op.type == "coalesce_tensor"]
    layout = {op.output("FusedOutput")[0]: op.input("Input") for op in fused}
    kept = {"": forward, "_train": main, "_startup": startup} if seed is None else {"": forward, "_startup": startup}
    for suffix, program in kept.items():
        write_gz(out / f"{name}{suffix}.pb", without_callstacks(program))
    np.savez_compressed(out / f"{name}_trained.npz",
                        **(trained if seed is None else {buffer: trained[buffer] for buffer in layout}))
    if seed is None:
        np.savez(out / f"paddle_{name}.npz", **outputs)
    for buffer, cells in layout.items():   # the flat buffer holds the trained cells, in the coalesce order
        rebuilt = np.concatenate([trained[cell].ravel() for cell in cells])
        assert np.array_equal(trained[buffer], rebuilt) and not np.array_equal(initial[buffer], rebuilt), buffer
    return {"losses": losses, "loss": loss, "logits": logits, "flat_buffers": layout, "resumed_losses": resumed}


def resume(exe, main, loss, data, out):
    """paddle.static.save of the training program after the steps (gru.pdparams, gru.pdopt), then the same steps
    again from there: the losses, and the parameters after them (gru_resumed.npz)."""
    paddle.static.save(main, str(out / "gru"))
    losses = [float(exe.run(main, feed={key: value[step * BATCH:(step + 1) * BATCH] for key, value in data.items()},
                            fetch_list=[loss])[0]) for step in range(STEPS)]
    scope = paddle.static.global_scope()
    np.savez_compressed(out / "gru_resumed.npz", **{name: np.array(scope.var(name).get_tensor())
                                                    for name in ("gru_0.w_0", "linear_0.w_0", "embedding_0.w_0")})
    return losses


def main(out: Path) -> None:
    paddle_legacy_shim.install()
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    data = sentences()
    np.savez(out / "data.npz", **data)
    meta = {name: train(exe, name, logits_of, data, out)
            for name, logits_of in (("gru", gru_logits), ("transformer", transformer_logits))}
    meta["gru_dropout"] = train(exe, "gru_dropout", lambda *inputs: gru_logits(*inputs, dropout=0.1), data, out,
                                seed=5)
    for suffix in (".pdparams", ".pdopt"):
        write_gz(out / f"gru{suffix}", (out / f"gru{suffix}").read_bytes())
    for suffix in (".pdparams", ".pdopt", ".pdmodel"):   # the program as paddle.static.save writes it: not needed
        (out / f"gru{suffix}").unlink()
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    pir_half(__file__, out)


class Tagger(paddle.nn.Layer):
    """The trained BiGRU tagger in dygraph, its tags by argmax: what paddle.jit.save exports."""

    def __init__(self, trained: dict):
        super().__init__()
        self.embedding = paddle.nn.Embedding(VOCAB, HIDDEN)
        self.gru = paddle.nn.GRU(HIDDEN, HIDDEN, num_layers=2, direction="bidirect")
        self.linear = paddle.nn.Linear(2 * HIDDEN, TAGS)
        self.embedding.weight.set_value(trained["embedding_0.w_0"])
        self.linear.weight.set_value(trained["linear_0.w_0"])
        self.linear.bias.set_value(trained["linear_0.b_0"])
        for cell in range(4):   # cell k = layer k // 2, direction k % 2
            suffix = f"_l{cell // 2}" + ("_reverse" if cell % 2 else "")
            for kind, letter in (("weight", "w"), ("bias", "b")):
                for index, part in enumerate(("ih", "hh")):
                    getattr(self.gru, f"{kind}_{part}{suffix}").set_value(trained[f"gru_cell_{cell}.{letter}_{index}"])

    def forward(self, words, lengths):
        hidden, _ = self.gru(self.embedding(words), sequence_length=lengths)
        return paddle.argmax(self.linear(hidden), axis=-1)


def main_pir(out: Path) -> None:
    """The tagger saved by paddle.jit.save (PIR's tagger_pir.json and tagger_pir.pdiparams) and run by the
    Predictor on the 16 sentences."""
    model = Tagger(dict(np.load(out / "gru_trained.npz")))
    model.eval()
    specs = [paddle.static.InputSpec([-1, LENGTH], "int64", "words"),
             paddle.static.InputSpec([-1], "int64", "lengths")]
    paddle.jit.save(model, str(out / "tagger_pir"), input_spec=specs)
    data = dict(np.load(out / "data.npz"))
    with paddle.no_grad():
        dygraph = model(paddle.to_tensor(data["words"]), paddle.to_tensor(data["lengths"])).numpy()
    predicted = predict(str(out / "tagger_pir.json"), str(out / "tagger_pir.pdiparams"),
                        {"words": data["words"], "lengths": data["lengths"]})
    np.savez(out / "predictor_pir.npz", dygraph=dygraph, **predicted)
    gzip_file(out / "tagger_pir.json")


if __name__ == "__main__":
    script_main(main, main_pir)
