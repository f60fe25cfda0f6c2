"""Forward programs of models at working sizes for benchmarks/models.py, built from Paddle's own layers (paddle.nn) in
legacy static mode: benchmarks/programs/<row>/forward.pb, with the loss and the parameters in meta.json. The layers
rows of tests/data/paddle/layers are small by design (they are checked against Paddle's gradients); these are sized
as users train them, so that a kernel slow at such sizes shows (gelu's erf did: 5x).

    FLAGS_enable_pir_api=0 /path/to/paddle-python tools/paddle_bench_programs.py [--out benchmarks/programs]

Paddle 3.3.1 binds some APIs (paddle.matmul, F.gelu, ...) to C functions that reject legacy Variables;
tools/paddle_legacy_shim.py rebinds them to the legacy ops older Paddle appended.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("FLAGS_enable_pir_api", "0")

import paddle  # noqa: E402
from paddle import nn  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
import paddle_legacy_shim  # noqa: E402
from paddle_programs import without_callstacks  # noqa: E402

OUT = Path(__file__).resolve().parent.parent / "benchmarks" / "programs"


def bert_mini():
    """A BERT-style masked-token model: 4 encoder layers of width 256 (4 heads, gelu feed-forward of 1024) over
    128 tokens of an 8,000-word vocabulary."""
    ids = paddle.static.data("ids", [-1, 128], "int64")
    label = paddle.static.data("label", [-1, 128, 1], "int64")
    layer = nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.1, activation="gelu")
    hidden = nn.TransformerEncoder(layer, 4)(nn.Embedding(8000, 256)(ids))
    return paddle.mean(nn.functional.cross_entropy(nn.Linear(256, 8000)(hidden), label))


def lstm_lm():
    """A word-level language model: two LSTM layers of 512 over 64 tokens of a 10,000-word vocabulary."""
    ids = paddle.static.data("ids", [-1, 64], "int64")
    label = paddle.static.data("label", [-1, 64, 1], "int64")
    hidden, _ = nn.LSTM(256, 512, num_layers=2)(nn.Embedding(10000, 256)(ids))
    return paddle.mean(nn.functional.cross_entropy(nn.Linear(512, 10000)(hidden), label))


def unet_small():
    """A segmentation U-Net on 128x128 images: conv-BN-ReLU blocks of 16/32/64 channels, a transposed convolution
    and a bilinear upsampling on the way up, skip connections by concat, 4 classes per pixel."""
    def block(h, channels):
        for _ in range(2):
            h = nn.ReLU()(nn.BatchNorm2D(channels)(nn.Conv2D(h.shape[1], channels, 3, padding=1)(h)))
        return h
    x = paddle.static.data("x", [-1, 3, 128, 128], "float32")
    label = paddle.static.data("label", [-1, 1, 128, 128], "int64")
    e1 = block(x, 16)
    e2 = block(nn.MaxPool2D(2)(e1), 32)
    e3 = block(nn.MaxPool2D(2)(e2), 64)
    d2 = block(paddle.concat([nn.Conv2DTranspose(64, 32, 2, stride=2)(e3), e2], axis=1), 32)
    d1 = block(paddle.concat([nn.functional.interpolate(d2, scale_factor=2, mode="bilinear"), e1], axis=1), 16)
    return paddle.mean(nn.functional.cross_entropy(nn.Conv2D(16, 4, 1)(d1), label, axis=1))


ROWS = {"bert_mini": bert_mini, "lstm_lm": lstm_lm, "unet_small": unet_small}


def write(row: str, out: Path) -> None:
    paddle.seed(0)
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        loss = ROWS[row]()
    folder = out / row
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "forward.pb").write_bytes(without_callstacks(main))
    meta = {"row": row, "made_by": "tools/paddle_bench_programs.py", "paddle": paddle.__version__,
            "about": " ".join(ROWS[row].__doc__.split()), "loss": loss.name,
            "params_grads": [[name, name + "@GRAD"] for name in _in_reading_order(main)]}
    (folder / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(f"{row}: {len(main.global_block().ops)} ops, loss {loss.name}")


def _in_reading_order(program) -> list[str]:
    """The parameters in the order the program's ops first read them: the first is the input layer's, whose grad
    passes through the whole model (benchmarks/models.py compares it with Paddle's)."""
    params = {p.name for p in program.all_parameters()}
    names = [name for op in program.global_block().ops for name in op.input_arg_names if name in params]
    return list(dict.fromkeys(names))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("rows", nargs="*", default=list(ROWS))
    args = parser.parse_args()
    paddle.enable_static()
    paddle_legacy_shim.install()
    for row in args.rows:
        write(row, args.out)


if __name__ == "__main__":
    main()
