"""Paddle 3.3.1's pyramid_hash with bloom filters and its pyramid_hash_grad (an in-place update of W), run by
Paddle's legacy CPU executor, for tests/test_pyramid_hash.py. Each case is a legacy program of the op (the grad
case: pyramid_hash, then pyramid_hash_grad appended by hand, as Paddle's append_backward never writes it), written
with its feed and Paddle's outputs to tests/data/paddle/pyramid_hash/<case>/ (program.pb, feed.npz with the ids'
sequence lengths, expected.npz). The filters are built here with gradc's MurmurHash3 (a wrong hash would keep other
n-grams than Paddle's filter check does). Not part of the package: it needs paddlepaddle.

    FLAGS_enable_pir_api=0 PYTHONPATH=src /work/paddle-venv/bin/python tools/paddle_pyramid_hash.py
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import numpy as np
import paddle
from paddle.base.layer_helper import LayerHelper

from gradc.executor.kernels.pyramid_hash import BLOOM_MAGIC, murmur3_x64_128

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "pyramid_hash"
LENGTHS = [4, 1, 3, 5, 2]
ATTRS = {"num_emb": 6, "space_len": 40, "pyramid_layer": 3, "rand_len": 2, "drop_out_percent": 0.3,
         "seed": 5, "lr": 0.25}


def ngrams(ids: np.ndarray, lengths: list[int], layers: int) -> list[bytes]:
    grams, begin = [], 0
    for length in lengths:
        for size in range(2, min(layers, length) + 1):
            grams += [ids[begin + s:begin + s + size].astype(np.float32).tobytes() for s in range(length - size + 1)]
        begin += length
    return grams


def bloom(members: list[bytes], bits: int = 512, probes: int = 3) -> np.ndarray:
    """Paddle's filter struct holding ``members``, as the float32 values whose bytes it is ([n, 1])."""
    vector = bytearray(bits // 8)
    for data in members:
        for seed in range(probes):
            for h in murmur3_x64_128(data, seed):
                vector[(h % bits) >> 3] |= 0x80 >> ((h % bits) & 7)
    raw = struct.pack("<4Q", BLOOM_MAGIC, bits, probes, len(members)) + bytes(vector)
    return np.frombuffer(raw, np.float32).reshape(-1, 1).copy()


def build(feed: dict, attrs: dict, with_grad: bool):
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("ids", [-1, 1], "int32", lod_level=1)
        w, white, black = (paddle.static.data(n, list(feed[n].shape), "float32") for n in ("w", "white", "black"))
        helper = LayerHelper("pyramid_hash")
        out = helper.create_variable_for_type_inference("float32")
        drop = helper.create_variable_for_type_inference("int32")
        temp = helper.create_variable_for_type_inference("float32")
        helper.append_op(type="pyramid_hash", inputs={"X": x, "W": w, "WhiteList": white, "BlackList": black},
                         outputs={"Out": out, "DropPos": drop, "X_Temp_Out": temp}, attrs=dict(attrs))
        fetches = [out, drop]
        if with_grad:
            dout = paddle.static.data("dout", [-1, attrs["num_emb"]], "float32")
            grad = main.global_block().desc.append_op()   # Python's op protos hold no grad op: the desc directly
            grad.set_type("pyramid_hash_grad")
            for slot, var in (("X", x), ("W", w), ("DropPos", drop), ("X_Temp_Out", temp), ("Out@GRAD", dout)):
                grad.set_input(slot, [var.name])
            x_grad = main.global_block().create_var(name="ids@GRAD", dtype="int32", shape=[-1, 1])
            grad.set_output("X@GRAD", [x_grad.name])   # 3.3.1's infer shape (UnchangedInferMeta) needs the var
            setter = {bool: grad._set_bool_attr, int: grad._set_int32_attr, float: grad._set_float32_attr,
                      str: grad._set_str_attr}   # typed: _set_attr would store a bool as an int
            for name, value in {**attrs, "distribute_update_vars": ""}.items():
                setter[type(value)](name, value)
            main._sync_with_cpp()
            fetches = [w]
    return main, fetches


def write(case: str, attrs: dict, white: list[bytes], black: list[bytes], dout_rows: int = 0) -> None:
    rng = np.random.default_rng(len(case))
    ids = rng.integers(0, 30, (sum(LENGTHS), 1)).astype(np.int32)
    feed = {"w": rng.standard_normal((attrs["space_len"] + attrs["rand_len"], 1)).astype(np.float32),
            "white": bloom(white) if white else np.zeros((1, 1), np.float32),
            "black": bloom(black) if black else np.zeros((1, 1), np.float32)}
    if dout_rows:
        feed["dout"] = rng.standard_normal((dout_rows, attrs["num_emb"])).astype(np.float32)
    attrs = {**attrs, "white_list_len": len(feed["white"]) if white else 0,
             "black_list_len": len(feed["black"]) if black else 0}
    main, fetches = build(feed, attrs, bool(dout_rows))
    place = paddle.CPUPlace()
    lod_ids = paddle.base.create_lod_tensor(ids, [LENGTHS], place)
    values = paddle.static.Executor(place).run(main, feed={"ids": lod_ids, **feed}, fetch_list=fetches,
                                               return_numpy=False)
    directory = OUT / case
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    (directory / "program.pb").write_bytes(main.desc.serialize_to_string())
    np.savez_compressed(directory / "feed.npz", ids=ids, lengths=np.array(LENGTHS), **feed)
    names = ["w_after"] if dout_rows else ["out", "drop_pos"]
    expected = {name: np.array(value) for name, value in zip(names, values)}
    expected |= {f"{name}_lod": np.array(value.lod()[0]) for name, value in zip(names, values) if value.lod()}
    np.savez_compressed(directory / "expected.npz", fetch=np.array([v.name for v in fetches]), **expected)
    print(case, {k: v.shape for k, v in expected.items()})


def main() -> None:
    paddle.enable_static()
    ids = np.random.default_rng(len("filters")).integers(0, 30, (sum(LENGTHS), 1)).astype(np.int32)
    grams = ngrams(ids, LENGTHS, ATTRS["pyramid_layer"])
    white, black = grams[::2], grams[1::4]   # the black list drops some of the white list's
    write("filters", {**ATTRS, "is_training": 1, "use_filter": True}, white, black)
    write("white_only_inference", {**ATTRS, "is_training": 0, "use_filter": True}, grams[::3], [])
    grad_ids = np.random.default_rng(len("grad_update")).integers(0, 30, (sum(LENGTHS), 1)).astype(np.int32)
    rows = len(ngrams(grad_ids, LENGTHS, 3)) + sum(length < 2 for length in LENGTHS)   # Out's rows, dropout off
    write("grad_update", {**ATTRS, "is_training": 0, "use_filter": False}, [], [], dout_rows=rows)


if __name__ == "__main__":
    main()
