"""The deployment engineer's model of docs/tools.md's 'A deployment engineer's week': a legacy static program built
by Paddle 3.3.1 with two inputs (an 8x8 image and int64 tokens of 5 ids), a conv without bias, batch norm, ReLU,
max pooling, an embedding averaged over the tokens, dropout, an fc giving logits and their softmax, and a
cross-entropy loss with labels. Writes main.pb (the forward program with its loss), startup.pb, and data.npz: a
training set (train_img, train_tokens, train_label, 14 rows) and inputs of batch 1 and 7 (img1, tokens1, img7,
tokens7) for the exported model; paddle_export/model.pdmodel + .pdiparams, Paddle's save_inference_model of the
initial model (inputs img, tokens; outputs the logits and softmax), and predictor.npz, what a Paddle Inference
Predictor (IR optimisation on) gives for the inputs of batch 1 and 7 (logits1, probs1, logits7, probs7).

    FLAGS_enable_pir_api=0 /path/to/paddle/python tools/paddle_user_week6.py tests/data/paddle/user_week6
"""

import os
import sys

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle import nn

RNG = np.random.default_rng(6)
VOCAB, TOKENS = 20, 5


def build(main, startup):
    with paddle.static.program_guard(main, startup):
        img = paddle.static.data("img", [-1, 1, 8, 8], "float32")
        tokens = paddle.static.data("tokens", [-1, TOKENS], "int64")
        label = paddle.static.data("label", [-1, 1], "int64")
        conv, norm = nn.Conv2D(1, 4, 3, padding=1, bias_attr=False), nn.BatchNorm2D(4)
        embedding, fc = nn.Embedding(VOCAB, 6), nn.Linear(4 * 4 * 4 + 6, 3)
        pixels = paddle.flatten(F.max_pool2d(F.relu(norm(conv(img))), 2), 1)
        words = paddle.mean(embedding(tokens), axis=1)
        hidden = F.dropout(paddle.concat([pixels, words], axis=1), 0.3)
        logits = fc(hidden)
        probs = F.softmax(logits)
        F.cross_entropy(logits, label)
    return img, tokens, logits, probs


def write(path, program):
    with open(path, "wb") as out:
        out.write(program.desc.serialize_to_string())


def main(target):
    paddle.enable_static()
    os.makedirs(target, exist_ok=True)
    main_program, startup = paddle.static.Program(), paddle.static.Program()
    main_program.random_seed = startup.random_seed = 6
    img, tokens, logits, probs = build(main_program, startup)
    write(os.path.join(target, "main.pb"), main_program)
    write(os.path.join(target, "startup.pb"), startup)
    data = {}
    for name, rows in (("train", 14), ("1", 1), ("7", 7)):
        key = "" if name != "train" else "train_"
        suffix = name if name != "train" else ""
        data[f"{key}img{suffix}"] = RNG.standard_normal((rows, 1, 8, 8)).astype(np.float32)
        data[f"{key}tokens{suffix}"] = RNG.integers(0, VOCAB, (rows, TOKENS)).astype(np.int64)
    data["train_label"] = RNG.integers(0, 3, (14, 1)).astype(np.int64)
    np.savez(os.path.join(target, "data.npz"), **data)
    executor = paddle.static.Executor(paddle.CPUPlace())
    executor.run(startup)
    prefix = os.path.join(target, "paddle_export", "model")
    paddle.static.save_inference_model(prefix, [img, tokens], [logits, probs], executor, program=main_program)
    np.savez(os.path.join(target, "predictor.npz"), **predict(prefix, data))


def predict(prefix, data):
    """The Predictor's outputs, IR optimisation on, for the inputs of batch 1 and 7."""
    from paddle.inference import Config, create_predictor
    config = Config(prefix + ".pdmodel", prefix + ".pdiparams")
    config.switch_ir_optim(True)
    predictor = create_predictor(config)
    out = {}
    for size in ("1", "7"):
        for name in predictor.get_input_names():
            handle = predictor.get_input_handle(name)
            handle.reshape(data[name + size].shape)
            handle.copy_from_cpu(data[name + size])
        predictor.run()
        for key, name in zip(("logits", "probs"), predictor.get_output_names()):
            out[key + size] = predictor.get_output_handle(name).copy_to_cpu()
    return out


if __name__ == "__main__":
    main(sys.argv[1])
