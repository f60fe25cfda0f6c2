"""An a_f32 attribute is a float32 for Paddle's PIR reader, whatever decimal the JSON holds: gradc rounds it the same
way (gradc.pir.codec), an a_f64 stays as written. The program is tools/paddle_pir_f32_attrs.py's, hand-written with
0.3, -0.3 and 0.7 in a_f32 attributes and 0.1 in a_f64 ones, and expected.npz is Paddle's own run of it."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

import gradc
from gradc.pir import load_pir, parse_pir, serialize_pir
from gradc.pir.codec import as_float32, decode_attr

CASE = Path(__file__).parent / "data" / "paddle" / "pir_f32_attrs"


def _run(program) -> dict:
    fetches = json.loads((CASE / "meta.json").read_text())["fetches"]
    with np.load(CASE / "feed.npz") as feed:
        values = gradc.Executor().run(program, dict(feed), fetches, gradc.Scope())
    return dict(zip(fetches, values))


def test_float64_kernels_use_the_float32_value_of_an_a_f32_as_paddle():
    got = _run(load_pir(CASE / "program.json"))
    with np.load(CASE / "expected.npz") as expected:
        assert set(expected.files) == set(got)
        for name in expected.files:   # 0.3 in place of 0.3f would move elu by 4e-8 of its value
            assert got[name].dtype == np.float64
            np.testing.assert_allclose(got[name], expected[name], rtol=1e-15, atol=1e-15, err_msg=name)


def test_the_attributes_read_are_float32_for_a_f32_and_as_written_for_a_f64():
    ops = {op.type: op for op in load_pir(CASE / "program.json").global_block.ops}
    assert ops["elu"].attr("alpha") == float(np.float32(0.3)) != 0.3
    assert ops["brelu"].attr("t_max") == float(np.float32(0.7))   # hardtanh's legacy op
    assert ops["leaky_relu"].attr("alpha") == 0.1   # legacy name of negative_slope


def test_gradcs_export_writes_the_float32_value_and_reads_back_the_same():
    program = load_pir(CASE / "program.json")
    fetches = json.loads((CASE / "meta.json").read_text())["fetches"]
    data = serialize_pir(program, fetch=fetches)
    assert b'"D":0.30000001192092896' in data.replace(b" ", b"")
    again = _run(parse_pir(data))
    for name, value in _run(program).items():
        np.testing.assert_array_equal(again[name], value, err_msg=name)


@pytest.mark.parametrize("written, read", [(0.1, 0.10000000149011612), (1e-5, 9.999999747378752e-06),
                                           (16777217, 16777216.0), (3.4028235e38, 3.4028234663852886e38),
                                           (1e39, math.inf), (-1e39, -math.inf), (1e-46, 0.0)])
def test_as_float32_rounds_to_nearest_and_overflows_to_inf(written, read):
    assert as_float32(written) == read
    assert decode_attr({"#": "0.a_f32", "D": written}).value == read
    assert decode_attr({"#": "0.a_f64", "D": written}).value == float(written)
