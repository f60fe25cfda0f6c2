"""The sequence-labelling engineer's programs of docs/tools.md's 'A sequence-labelling engineer's week', written with
Paddle 3.3.1's layers in legacy static mode (FLAGS_enable_pir_api=0): named-entity tagging of padded sentences.

Paddle 3.3.1 has no linear_chain_crf op (nor a Python API for one), so the CRF's negative log-likelihood is written
as PaddleNLP's LinearChainCrf writes it, from Paddle's ops: the forward algorithm unrolled over the padded length
(logsumexp of alpha plus the transitions, kept where the step is past a sentence's length by a mask from the
lengths), minus the gold path's score (one_hot of the labels times the emissions; the outer product of consecutive
one_hots times the transitions).

- crf.pb: an Embedding, a BiLSTM (nn.LSTM direction="bidirect", given sequence_length), emissions by Linear and the
  CRF loss (mean over the batch); the transitions a parameter; trained by Paddle's Adam (lr 0.05), 3 epochs of
  6 batches of 4.
- decode.pb: the forward program (a clone) decoded by viterbi_decode (paddle.text.viterbi_decode,
  include_bos_eos_tag=False) and scored by chunk_eval (IOB, 2 chunk types, SeqLength given) against the labels;
  run on Paddle's trained scope.
- decoder.pdmodel: the decoder alone (words, lengths -> path) saved by save_inference_model, run by the Predictor;
  and, in PIR mode (a second interpreter), the same net in dygraph with the trained weights, decoding by
  paddle.text.ViterbiDecoder, saved by paddle.jit.save (decoder_pir.json) and run so.

Written (programs gzipped): crf.pb, crf_startup.pb, decode.pb, decoder.pdmodel, data.npz (words, lengths, labels),
trained.npz, paddle_decoded.npz (the decoder's path and scores, chunk_eval's outputs, the Predictor's path),
decoder_pir.json, decoder_pir.pdiparams, predictor_pir.npz (the PIR Predictor's path), meta.json (Paddle's losses
per step, the vars' names, Paddle's float64 gradients' errors against central differences).

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week28.py tests/data/paddle/user_week28
"""

import json
import tempfile
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
import paddle_legacy_shim
from paddle.base.layer_helper import LayerHelper
from paddle_programs import pir_half, predict, script_main, without_callstacks, write_gz

VOCAB, LENGTH, TAGS, CHUNK_TYPES, SENTENCES, BATCH, STEPS = 20, 7, 5, 2, 24, 4, 18
OUTSIDE = 2 * CHUNK_TYPES  # chunk_eval's IOB tags: 2 * type (B), 2 * type + 1 (I), 2 * types (O)
RNG = np.random.default_rng(28)


def sentences() -> dict:
    """Padded sentences and their IOB tags by a rule a tagger can learn: words 1-3 begin a type-0 entity that words
    4-5 continue, words 6-7 a type-1 one continued by 8-9; the rest are outside. Padding is word 0, tag O."""
    lengths = RNG.integers(2, LENGTH + 1, SENTENCES)
    lengths[0] = LENGTH
    words = RNG.integers(1, VOCAB, (SENTENCES, LENGTH))
    labels = np.full((SENTENCES, LENGTH), OUTSIDE)
    for words_row, labels_row, length in zip(words, labels, lengths):
        words_row[length:] = 0
        for t in range(length):
            word, previous = words_row[t], labels_row[t - 1] if t else OUTSIDE
            if word in (1, 2, 3):
                labels_row[t] = 0
            elif word in (6, 7):
                labels_row[t] = 2
            elif word in (4, 5, 8, 9) and previous != OUTSIDE and previous // 2 == (word >= 8):
                labels_row[t] = 2 * (word >= 8) + 1
    return {"words": words.astype(np.int64), "lengths": lengths.astype(np.int64), "labels": labels.astype(np.int64)}


def emissions(words, lengths):
    embedded = paddle.nn.Embedding(VOCAB, 8, weight_attr=paddle.ParamAttr(name="embedding.w"))(words)
    hidden, _ = paddle.nn.LSTM(8, 8, direction="bidirect")(embedded, sequence_length=lengths)
    return paddle.nn.Linear(16, TAGS, weight_attr=paddle.ParamAttr(name="emission.w"),
                            bias_attr=paddle.ParamAttr(name="emission.b"))(hidden)


def transitions():
    return paddle.static.create_parameter([TAGS, TAGS], "float32", attr=paddle.ParamAttr(name="crf.transitions"))


def crf_nll(emission, transition, labels, lengths):
    """Per sentence: log Z by the forward algorithm (masked past the length) minus the gold path's score."""
    mask = paddle.cast(paddle.arange(LENGTH, dtype="int64").unsqueeze(0) < lengths.unsqueeze(1), emission.dtype)
    alpha = emission[:, 0]
    for t in range(1, LENGTH):
        moved = paddle.logsumexp(alpha.unsqueeze(2) + transition.unsqueeze(0), axis=1) + emission[:, t]
        kept = mask[:, t:t + 1]
        alpha = kept * moved + (1 - kept) * alpha
    log_z = paddle.logsumexp(alpha, axis=1)
    onehot = F.one_hot(labels, TAGS).astype(emission.dtype)
    gold = paddle.sum(paddle.sum(onehot * emission, 2) * mask, 1)
    pairs = paddle.sum(paddle.matmul(onehot[:, :-1].unsqueeze(3), onehot[:, 1:].unsqueeze(2)) * transition, [2, 3])
    return log_z - gold - paddle.sum(pairs * mask[:, 1:], 1)


def chunk_eval(inference, label, lengths):
    """The chunk_eval op as fluid.layers.chunk_eval appended it (Paddle 3.3.1 keeps the op, not the API)."""
    helper = LayerHelper("chunk_eval")
    slots = ["Precision", "Recall", "F1-Score", "NumInferChunks", "NumLabelChunks", "NumCorrectChunks"]
    outs = {slot: helper.create_variable_for_type_inference("float32" if i < 3 else "int64")
            for i, slot in enumerate(slots)}
    helper.append_op(type="chunk_eval", inputs={"Inference": inference, "Label": label, "SeqLength": lengths},
                     outputs={slot: [var] for slot, var in outs.items()},
                     attrs={"num_chunk_types": CHUNK_TYPES, "chunk_scheme": "IOB", "excluded_chunk_types": []})
    return outs


def programs():
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 28
    with paddle.static.program_guard(main, startup):
        words = paddle.static.data("words", [-1, LENGTH], "int64")
        lengths = paddle.static.data("lengths", [-1], "int64")
        labels = paddle.static.data("labels", [-1, LENGTH], "int64")
        emission = emissions(words, lengths)
        loss = paddle.mean(crf_nll(emission, transitions(), labels, lengths))
    forward = main.clone()
    with paddle.static.program_guard(main, startup):
        paddle.optimizer.Adam(0.05).minimize(loss)
    decode = forward.clone()
    with paddle.static.program_guard(decode, paddle.static.Program()):
        block = decode.global_block()
        words, lengths, labels = (block.var(name) for name in ("words", "lengths", "labels"))
        scores, path = paddle.text.viterbi_decode(block.var(emission.name), block.var("crf.transitions"), lengths,
                                                  include_bos_eos_tag=False)
        # viterbi_decode's legacy shape inference leaves the path's shape [], which chunk_eval's refuses
        path.desc.set_shape([-1, LENGTH])
        chunks = chunk_eval(path, labels, lengths)
    names = {"loss": loss.name, "emission": emission.name,
             "path": path.name, "scores": scores.name, **{slot: var.name for slot, var in chunks.items()}}
    return main, forward, startup, decode, names, (words, lengths, path)


def export(out: Path, exe, decode, inputs, data: dict) -> np.ndarray:
    words, lengths, path = inputs
    with tempfile.TemporaryDirectory() as saved:
        paddle.static.save_inference_model(f"{saved}/decoder", [words, lengths], [path], exe, program=decode)
        write_gz(out / "decoder.pdmodel", Path(f"{saved}/decoder.pdmodel").read_bytes())
        (path,) = predict(f"{saved}/decoder.pdmodel", f"{saved}/decoder.pdiparams", data).values()
        return path


def float64_gradients(exe, data: dict) -> dict:
    """Paddle's float64 gradients (append_backward of the same CRF loss, emissions and transitions fed in float64)
    against central differences: the largest absolute difference of each."""
    program = paddle.static.Program()
    with paddle.static.program_guard(program, paddle.static.Program()):
        emission = paddle.static.data("emission", [4, LENGTH, TAGS], "float64")
        transition = paddle.static.data("transition", [TAGS, TAGS], "float64")
        emission.stop_gradient = transition.stop_gradient = False
        labels = paddle.static.data("labels", [4, LENGTH], "int64")
        lengths = paddle.static.data("lengths", [4], "int64")
        loss = paddle.mean(crf_nll(emission, transition, labels, lengths))
        grads = paddle.static.gradients(loss, [emission, transition])
    feed = {"emission": RNG.standard_normal((4, LENGTH, TAGS)), "transition": RNG.standard_normal((TAGS, TAGS)),
            "labels": data["labels"][:4], "lengths": data["lengths"][:4]}
    analytic = exe.run(program, feed=feed, fetch_list=grads)
    errors = {}
    for name, grad in zip(("emission", "transition"), analytic):
        numeric = np.zeros(grad.size)
        for i in range(grad.size):
            sides = []
            for sign in (1, -1):
                moved = feed[name].copy().ravel()
                moved[i] += sign * 1e-6
                sides.append(float(exe.run(program, feed={**feed, name: moved.reshape(grad.shape)},
                                           fetch_list=[loss])[0]))
            numeric[i] = (sides[0] - sides[1]) / 2e-6
        errors[name] = float(np.abs(grad.ravel() - numeric).max())
    return errors


def main(out: Path) -> None:
    paddle_legacy_shim.install()
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    data = sentences()
    np.savez(out / "data.npz", **data)
    main_program, forward, startup, decode, names, inputs = programs()
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        losses = []
        for step in range(STEPS):
            feed = {key: value[step % 6 * BATCH:(step % 6 + 1) * BATCH] for key, value in data.items()}
            losses.append(float(exe.run(main_program, feed=feed, fetch_list=[names["loss"]])[0]))
        trained = {param.name: np.array(scope.var(param.name).get_tensor())
                   for param in main_program.global_block().all_parameters()}
        slots = ["scores", "path", "Precision", "Recall", "F1-Score", "NumInferChunks", "NumLabelChunks",
                 "NumCorrectChunks"]
        decoded = dict(zip(slots, exe.run(decode, feed=data, fetch_list=[names[slot] for slot in slots])))
        decoded["predictor_path"] = export(out, exe, decode, inputs, data)
    write_gz(out / "crf.pb", without_callstacks(forward))
    write_gz(out / "crf_startup.pb", without_callstacks(startup))
    write_gz(out / "decode.pb", without_callstacks(decode))
    np.savez(out / "trained.npz", **trained)
    np.savez(out / "paddle_decoded.npz", **decoded)
    meta = {"names": names, "losses": losses, "paddle_float64_gradient_errors": float64_gradients(exe, data)}
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    pir_half(__file__, out)


class Decoder(paddle.nn.Layer):
    """The trained tagger in dygraph, decoding by paddle.text.ViterbiDecoder: what paddle.jit.save exports."""

    def __init__(self, trained: dict):
        super().__init__()
        self.embedding, self.lstm = paddle.nn.Embedding(VOCAB, 8), paddle.nn.LSTM(8, 8, direction="bidirect")
        self.linear = paddle.nn.Linear(16, TAGS)
        self.decoder = paddle.text.ViterbiDecoder(paddle.to_tensor(trained["crf.transitions"]),
                                                  include_bos_eos_tag=False)
        cells = {f"{kind}_{part}_l0{suffix}": trained[f"lstm_cell_{cell}.{letter}_{index}"]
                 for cell, suffix in ((0, ""), (1, "_reverse")) for kind, letter in (("weight", "w"), ("bias", "b"))
                 for index, part in enumerate(("ih", "hh"))}
        self.embedding.weight.set_value(trained["embedding.w"])
        self.linear.weight.set_value(trained["emission.w"])
        self.linear.bias.set_value(trained["emission.b"])
        for name, value in cells.items():
            getattr(self.lstm, name).set_value(value)

    def forward(self, words, lengths):
        hidden, _ = self.lstm(self.embedding(words), sequence_length=lengths)
        return self.decoder(self.linear(hidden), lengths)[1]


def main_pir(out: Path) -> None:
    """The decoder saved by paddle.jit.save (PIR's decoder_pir.json and its decoder_pir.pdiparams) and run by the
    Predictor on the 24 sentences."""
    model = Decoder(dict(np.load(out / "trained.npz")))
    model.eval()
    specs = [paddle.static.InputSpec([-1, LENGTH], "int64", "words"), paddle.static.InputSpec([-1], "int64",
                                                                                              "lengths")]
    data = np.load(out / "data.npz")
    with tempfile.TemporaryDirectory() as saved:
        paddle.jit.save(model, f"{saved}/decoder", input_spec=specs)
        write_gz(out / "decoder_pir.json", Path(f"{saved}/decoder.json").read_bytes())
        # the transitions, ViterbiDecoder's tensor and no parameter, are saved by a generated name beside the weights
        (out / "decoder_pir.pdiparams").write_bytes(Path(f"{saved}/decoder.pdiparams").read_bytes())
        (path,) = predict(f"{saved}/decoder.json", f"{saved}/decoder.pdiparams", data).values()
    np.savez(out / "predictor_pir.npz", path=path)


if __name__ == "__main__":
    script_main(main, main_pir)
