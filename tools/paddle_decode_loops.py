"""tools/paddle_generation.py's decoding loops made of Paddle's own layers: a `paddle.nn.TransformerDecoder` (2
layers, hidden 32, 2 heads, vocabulary 50) over a fed memory, its self-attention caches growing a step at a time as
`paddle.static.nn.while_loop` carries them, exported with `paddle.jit.to_static` (seed 0):

- SAMPLER samples each token with temperature, top-k and top-p as PaddleNLP's CPU `sample` filters them (a top_k-th
  probability threshold; sort and cumsum for the top-p set; then `paddle.multinomial`); top_k 1 is greedy.
- BEAM keeps 3 beams a prompt: the summed log-probabilities of beams times vocabulary, topk, the caches gathered by
  the chosen beams, and the tokens traced back by `paddle.nn.functional.gather_tree`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

DECODE_LOOPS = ["SAMPLER", "BEAM"]
VOCAB, HIDDEN, HEADS, LAYERS, MEMORY, BEAMS = 50, 32, 2, 2, 5, 3


def _decoder_class():
    import paddle
    from paddle import nn

    class Decoder(nn.Layer):
        """Embeddings, the Transformer decoder and its vocabulary head; step() decodes one token a row."""

        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(VOCAB, HIDDEN)
            self.position = nn.Embedding(32, HIDDEN)
            layer = nn.TransformerDecoderLayer(HIDDEN, HEADS, 2 * HIDDEN, dropout=0.0)
            self.decoder = nn.TransformerDecoder(layer, LAYERS)
            self.head = nn.Linear(HIDDEN, VOCAB)

        def caches(self, memory) -> tuple[list, list]:
            """The memory's keys and values (made once) and the empty self-attention caches, flat (k, v a layer)."""
            static = [kv for _, kv in self.decoder.gen_cache(memory)]
            return static, [t for cache, _ in self.decoder.gen_cache(memory) for t in (cache.k, cache.v)]

        def step(self, ids, step, memory, static, growing) -> tuple:
            """-> the next token's logits, the grown caches (flat)."""
            cache = nn.MultiHeadAttention.Cache
            caches = [(cache(growing[2 * i], growing[2 * i + 1]), kv) for i, kv in enumerate(static)]
            y, caches = self.decoder(self.embedding(ids) + self.position(step), memory, cache=caches)
            return self.head(y[:, -1]), [t for c, _ in caches for t in (c.k, c.v)]

    return paddle, Decoder


def _sampler(steps: int):
    paddle, decoder_class = _decoder_class()
    import paddle.nn.functional as F

    class Sampler(decoder_class):
        def forward(self, memory, start, top_k, top_p, temperature):
            static, growing = self.caches(memory)

            def body(step, ids, out, *growing):
                logits, growing = self.step(ids, step, memory, static, growing)
                probs = F.softmax(logits / temperature)
                kth = paddle.topk(probs, paddle.squeeze(top_k))[0][:, -1:]
                probs = paddle.where(probs < kth, paddle.zeros_like(probs), probs)
                ordered = paddle.sort(probs, descending=True)
                likelier = paddle.cumsum(ordered, axis=-1) - ordered   # the top-p set: what is needed to reach top_p
                kept = paddle.where(likelier < top_p, ordered, paddle.full_like(ordered, 2.0))   # probs are <= 1
                cut = paddle.min(kept, -1, keepdim=True)
                token = paddle.multinomial(paddle.where(probs < cut, paddle.zeros_like(probs), probs))
                return [step + 1, token, paddle.concat([out, token], 1), *growing]

            first = [paddle.zeros([1], "int64"), start, paddle.zeros([paddle.shape(memory)[0], 0], "int64")]
            _, _, out, *_ = paddle.static.nn.while_loop(lambda step, *_: step < steps, body, first + growing)
            return out

    return Sampler


def _beam(steps: int):
    paddle, decoder_class = _decoder_class()
    import paddle.nn.functional as F

    class Beam(decoder_class):
        def forward(self, memory, start):
            batch = paddle.shape(memory)[0]
            memory = paddle.repeat_interleave(memory, BEAMS, 0)   # row b's beams are rows b * BEAMS ...
            static, growing = self.caches(memory)
            scores = paddle.tile(paddle.to_tensor([[0.0] + [-1e9] * (BEAMS - 1)]), [batch, 1])   # one live beam
            offsets = paddle.arange(batch, dtype="int64").unsqueeze(1) * BEAMS

            def body(step, ids, scores, tokens, parents, *growing):
                logits, growing = self.step(ids, step, memory, static, growing)
                total = paddle.reshape(scores, [-1, 1]) + F.log_softmax(logits)
                scores, index = paddle.topk(paddle.reshape(total, [batch, BEAMS * VOCAB]), BEAMS)
                parent, token = index // VOCAB, index % VOCAB
                rows = paddle.reshape(parent + offsets, [-1])
                return [step + 1, paddle.reshape(token, [-1, 1]), scores,
                        paddle.concat([tokens, token.unsqueeze(0)]), paddle.concat([parents, parent.unsqueeze(0)]),
                        *(paddle.gather(t, rows) for t in growing)]

            empty = paddle.zeros([0, batch, BEAMS], "int64")
            first = [paddle.zeros([1], "int64"), paddle.repeat_interleave(start, BEAMS, 0), scores, empty, empty]
            _, _, scores, tokens, parents, *_ = paddle.static.nn.while_loop(lambda step, *_: step < steps, body,
                                                                            first + growing)
            return F.gather_tree(tokens, parents), scores

    return Beam


def export_decode_loop(out: Path, case: str, modes: dict, steps: int, before_building) -> dict[str, dict]:
    """Save CASE's loop of ``steps`` tokens to out/inference (``before_building()`` first); -> its feeds by mode
    (SAMPLER: ``modes``' knobs)."""
    import paddle
    from paddle.static import InputSpec
    memory = np.random.default_rng(0).standard_normal((2, MEMORY, HIDDEN)).astype("float32")
    base = {"memory": memory, "start": np.ones((2, 1), "int64")}
    specs = [InputSpec([None, None, HIDDEN], "float32", "memory"), InputSpec([None, 1], "int64", "start")]
    if case == "BEAM":
        feeds = {"beam": base}
    else:
        feeds = {mode: {**base, "top_k": np.array([knobs["top_k"]]), "top_p": np.array([knobs["top_p"]], "float32"),
                        "temperature": np.array([knobs["temperature"]], "float32")} for mode, knobs in modes.items()}
        specs += [InputSpec([1], "int64", "top_k"), InputSpec([1], "float32", "top_p"),
                  InputSpec([1], "float32", "temperature")]
    before_building()
    paddle.seed(0)
    layer = (_beam if case == "BEAM" else _sampler)(steps)()
    layer.eval()
    paddle.jit.save(paddle.jit.to_static(layer, input_spec=specs, full_graph=True), str(out / "inference"))
    return feeds
