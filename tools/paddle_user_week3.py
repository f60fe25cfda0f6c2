"""The NLP engineer's models of docs/tools.md's 'An NLP engineer's and a performance-minded user's week': a small
GPT-like decoder (token and position embeddings, pre-norm nn.TransformerEncoderLayer under a causal mask, the output
projection tied to the token embedding, or untied) and a bidirectional nn.GRU tagger given sequence lengths, saved by
Paddle 3.3.1's `paddle.jit.save` (PIR model.json, its default), with a training set and Paddle's own losses of the
same model, seed and data (dropout 0): AdamW with weight decay on all but biases and norms (apply_decay_param_fun),
ClipGradByGlobalNorm(1.0), LinearWarmup into CosineAnnealingDecay, batches in order.

    /work/paddle-venv/bin/python tools/paddle_user_week3.py tests/data/paddle/user_week3

The performance-minded user's model, not committed (its parameters are 350 MB): a BERT-base encoder (12 layers of
hidden 768, 12 heads, intermediate 3072, GELU; a 2,000-token vocabulary) with a 2-class head, saved the same way:

    /work/paddle-venv/bin/python tools/paddle_user_week3.py --bert OUT_DIR [LAYERS WIDTH]

(96 layers of width 64 give a training program of 11,000 ops.)
"""

import json
import math
import sys
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle import nn

VOCAB, TOKENS, WIDTH, TAGS, BATCH, EXAMPLES = 24, 8, 16, 5, 4, 16
RATE, WARMUP, DECAY, WEIGHT_DECAY, CLIP = 0.01, 2, 6, 0.01, 1.0


class GPT(nn.Layer):
    def __init__(self, tied):
        super().__init__()
        self.tied = tied
        self.tokens, self.positions = nn.Embedding(VOCAB, WIDTH), nn.Embedding(TOKENS, WIDTH)
        layer = nn.TransformerEncoderLayer(WIDTH, 2, 2 * WIDTH, dropout=0.0, normalize_before=True)
        self.blocks, self.norm = nn.TransformerEncoder(layer, 2), nn.LayerNorm(WIDTH)
        if not tied:
            self.head = nn.Linear(WIDTH, VOCAB)

    def forward(self, ids):
        positions = paddle.arange(TOKENS, dtype="int64").unsqueeze(0)
        causal = paddle.triu(paddle.full([TOKENS, TOKENS], -1e4, "float32"), 1)
        hidden = self.norm(self.blocks(self.tokens(ids) + self.positions(positions), src_mask=causal))
        return paddle.matmul(hidden, self.tokens.weight, transpose_y=True) if self.tied else self.head(hidden)


class Tagger(nn.Layer):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 8, padding_idx=0)
        self.gru, self.out = nn.GRU(8, 8, direction="bidirect"), nn.Linear(16, TAGS)

    def forward(self, ids, lengths):
        return self.out(self.gru(self.embed(ids), sequence_length=lengths)[0])


def gpt_data(rng):
    ids = rng.integers(1, VOCAB, (EXAMPLES, TOKENS + 1))
    return {"ids": ids[:, :-1].astype("int64"), "label": ids[:, 1:].astype("int64")}


def tagger_data(rng):
    lengths = rng.integers(3, TOKENS + 1, EXAMPLES).astype("int64")
    ids = rng.integers(1, VOCAB, (EXAMPLES, TOKENS)).astype("int64")
    tags = rng.integers(0, TAGS, (EXAMPLES, TOKENS)).astype("int64")
    pad = np.arange(TOKENS)[None, :] >= lengths[:, None]
    ids[pad], tags[pad] = 0, -100    # cross_entropy's default ignore_index
    return {"ids": ids, "lengths": lengths, "label": tags}


def decays(name):
    """apply_decay_param_fun as a fine-tuning script writes it: no decay of biases and norms."""
    return not (".b_" in name or name.startswith("layer_norm"))


def decayed_rate(linear):
    """LinearWarmup from 0 into cosine annealing, or into a linear decay to 0 (PolynomialDecay of power 1)."""
    lr = paddle.optimizer.lr
    after = lr.PolynomialDecay(RATE, DECAY, 0.0) if linear else lr.CosineAnnealingDecay(RATE, DECAY)
    return lr.LinearWarmup(after, WARMUP, 0.0, RATE)


def paddle_losses(model, data, inputs, epochs, linear=False):
    schedule = decayed_rate(linear)
    optimizer = paddle.optimizer.AdamW(schedule, parameters=model.parameters(), weight_decay=WEIGHT_DECAY,
                                       apply_decay_param_fun=decays, grad_clip=nn.ClipGradByGlobalNorm(CLIP))
    losses = []
    for _ in range(epochs):
        for start in range(0, EXAMPLES, BATCH):
            batch = {k: paddle.to_tensor(v[start:start + BATCH]) for k, v in data.items()}
            logits = model(*[batch[name] for name in inputs])
            loss = F.cross_entropy(logits, batch["label"].unsqueeze(-1))
            loss.backward()
            optimizer.step()
            optimizer.clear_grad()
            schedule.step()
            losses.append(float(loss))
    return losses


def build(out, name, model, data, inputs, specs, epochs=2):
    model.eval()
    directory = out / name
    directory.mkdir(parents=True, exist_ok=True)
    paddle.jit.save(model, str(directory / "model"), input_spec=specs)
    np.savez(directory / "train.npz", **data)
    initial = {key: value.clone() for key, value in model.state_dict().items()}
    model.train()
    losses = paddle_losses(model, data, inputs, epochs)
    model.set_state_dict(initial)
    linear = paddle_losses(model, data, inputs, epochs, linear=True)
    decayed = sorted(p.name for p in model.parameters() if decays(p.name))
    return {"losses": losses, "linear_losses": linear, "decayed": decayed,
            "parameters": sorted(p.name for p in model.parameters())}


class Bert(nn.Layer):
    def __init__(self, vocab=2000, width=768, layers=12, positions=128):
        super().__init__()
        self.tokens, self.positions = nn.Embedding(vocab, width), nn.Embedding(positions, width)
        self.norm = nn.LayerNorm(width)
        heads = 12 if width % 12 == 0 else 4
        layer = nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.1, activation="gelu")
        self.encoder, self.pooler, self.head = nn.TransformerEncoder(layer, layers), nn.Linear(width, width), \
            nn.Linear(width, 2)

    def forward(self, ids):
        positions = paddle.arange(ids.shape[1], dtype="int64").unsqueeze(0)
        hidden = self.encoder(self.norm(self.tokens(ids) + self.positions(positions)))
        return self.head(paddle.tanh(self.pooler(hidden[:, 0])))


def bert(out, layers=12, width=768):
    paddle.seed(0)
    model = Bert(layers=layers, width=width)
    model.eval()
    paddle.jit.save(model, str(Path(out) / "bert"), input_spec=[paddle.static.InputSpec([None, 128], "int64", "ids")])
    rng = np.random.default_rng(0)
    np.savez(Path(out) / "batch.npz", ids=rng.integers(0, 2000, (8, 128)), label=rng.integers(0, 2, (8, 1)))


def main(out):
    out = Path(out)
    paddle.seed(0)
    rng = np.random.default_rng(0)
    meta = {"rate": RATE, "warmup": WARMUP, "decay_steps": DECAY, "weight_decay": WEIGHT_DECAY, "clip": CLIP,
            "batch": BATCH, "epochs": 2, "cosine_check": 0.5 * RATE * (1 + math.cos(math.pi / DECAY))}
    ids_spec = paddle.static.InputSpec([None, TOKENS], "int64", "ids")
    data = gpt_data(rng)
    for tied in (True, False):
        name = "gpt_tied" if tied else "gpt_untied"
        meta[name] = build(out, name, GPT(tied), data, ["ids"], [ids_spec])
    tag_data = tagger_data(rng)
    meta["tagger"] = build(out, "tagger", Tagger(), tag_data, ["ids", "lengths"],
                           [ids_spec, paddle.static.InputSpec([None], "int64", "lengths")])
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


if __name__ == "__main__":
    bert(sys.argv[2], *map(int, sys.argv[3:])) if sys.argv[1] == "--bert" else main(sys.argv[1])
