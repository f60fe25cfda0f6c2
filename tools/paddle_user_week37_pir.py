"""The PIR half of tools/paddle_user_week37.py, which runs it (`paddle_user_week37.py OUT --pir`) in a second
interpreter after its legacy half: the skip-gram in PIR static mode with Adam(lazy_mode=True) (pir_skipgram_*), and
the trained centre-word lookup saved by paddle.jit.save and run by the Predictor (embed_pir.json / .pdiparams,
predictor_pir.npz)."""

from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle_programs import gzip_file, predict
from paddle_user_week37 import BATCH, DIM, NEG, STEPS, VOCAB


class Lookup(paddle.nn.Layer):
    """The trained centre-word table as a layer: what paddle.jit.save exports for serving word vectors."""

    def __init__(self, table):
        super().__init__()
        self.embedding = paddle.nn.Embedding(VOCAB, DIM, padding_idx=0, sparse=True)
        self.embedding.weight.set_value(table)

    def forward(self, words):
        return F.normalize(self.embedding(words), axis=-1)


def pir_skipgram(feeds):
    """skipgram's model in PIR, where paddle.static.nn.embedding and nce are refused (legacy layers): both tables
    nn.Embedding(sparse=True), the centre words' padding_idx 0."""
    centre, context, negatives = feeds
    vectors = paddle.nn.Embedding(VOCAB, DIM, sparse=True, padding_idx=0)(centre)
    targets = paddle.nn.Embedding(VOCAB, DIM, sparse=True)(paddle.concat([context, negatives], axis=1))
    logits = paddle.sum(vectors * targets, axis=-1)
    labels = paddle.concat([paddle.ones_like(logits[:, :1]), paddle.zeros_like(logits[:, 1:])], axis=1)
    return {"loss": F.binary_cross_entropy_with_logits(logits, labels)}


def main_pir(out: Path) -> None:
    from paddle_pir_weeks import programs, save_case  # the PIR half only: it saves PIR programs

    paddle.enable_static()
    words = dict(np.load(out / "words.npz"))
    names = (("centre", 1), ("context", 1), ("negatives", NEG))
    built = programs(lambda: pir_skipgram([paddle.static.data(name, [-1, width], "int64") for name, width in names]),
                     lambda: paddle.optimizer.Adam(0.05, lazy_mode=True), 37)
    save_case(out / "pir_skipgram", built, [{key: value[step * BATCH:(step + 1) * BATCH]
                                             for key, value in words.items()} for step in range(STEPS)])
    for path in sorted((out / "pir_skipgram").iterdir()):   # flat, as the tests unpack a week's folder
        path.rename(out / f"pir_skipgram_{path.name}")
    (out / "pir_skipgram").rmdir()
    paddle.disable_static()
    model = Lookup(np.load(out / "skipgram_adam_trained.npz")["embedding_0.w_0"])
    model.eval()
    paddle.jit.save(model, str(out / "embed_pir"), input_spec=[paddle.static.InputSpec([-1], "int64", "words")])
    words = np.arange(VOCAB, dtype=np.int64)
    predicted = predict(str(out / "embed_pir.json"), str(out / "embed_pir.pdiparams"), {"words": words})
    np.savez(out / "predictor_pir.npz", words=words, **predicted)
    gzip_file(out / "embed_pir.json")
