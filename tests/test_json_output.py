"""--json of gradc run, check, verify and diff: one strict JSON document on stdout, field by field, on a good
program, on one with problems, and on bad input (stdout empty, one `gradc: error:` line, exit 1; 2 for usage)."""

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA
from gradc.executor import KERNELS
from gradc.verification import problem_fields
from json_checks import document, refused

MLP = DATA / "mlp"
GIVEN = ("--feed", MLP / "feed.npz", "--params", MLP / "params.npz")


def test_run_json_gives_each_fetched_var_and_where_out_wrote(tmp_path):
    out = tmp_path / "results.npz"
    doc = document(gradc_cli("run", MLP / "backward.pb", *GIVEN, "--fetch", "mean_0.tmp_0", "--fetch",
                             "fc_0.w_0@GRAD", "--fetch", "label", "--out", out, "--json"))
    saved = np.load(out)
    assert (doc["program"], doc["ops"], doc["out"]) == (str(MLP / "backward.pb"), 15, str(out))
    loss, grad, label = doc["fetched"]
    assert loss == {"name": "mean_0.tmp_0", "dtype": "float32", "shape": [], "size": 1,
                    "value": float(saved["mean_0.tmp_0"]), "nan": 0, "inf": 0}
    assert loss["value"] == pytest.approx(2.6917972564697266)   # Paddle's loss of the fixture
    values = saved["fc_0.w_0@GRAD"]
    assert grad == {"name": "fc_0.w_0@GRAD", "dtype": "float32", "shape": [16, 32], "size": 512,
                    "mean": float(values.mean()), "min": float(values.min()), "max": float(values.max()),
                    "nan": 0, "inf": 0}
    labels = np.load(MLP / "feed.npz")["label"]
    assert label == {"name": "label", "dtype": "int64", "shape": [32, 1], "size": 32, "mean": float(labels.mean()),
                     "min": int(labels.min()), "max": int(labels.max())}
    assert "profile" not in doc


def test_run_json_says_nan_and_inf_as_strings_and_counts_them(tmp_path):
    feed = dict(np.load(MLP / "feed.npz"))
    feed["x"] = feed["x"].copy()
    feed["x"][0, 0], feed["x"][1, :] = -np.inf, np.inf
    np.savez(tmp_path / "feed.npz", **feed)
    doc = document(gradc_cli("run", MLP / "forward.pb", "--feed", tmp_path / "feed.npz", "--params",
                             MLP / "params.npz", "--fetch", "mean_0.tmp_0", "--fetch", "x", "--json"))
    loss, x = doc["fetched"]
    assert (loss["value"], loss["nan"]) == ("nan", 1)
    assert (x["nan"], x["inf"], x["min"], x["max"], x["mean"]) == (0, 17, "-inf", "inf", "nan")


def test_run_json_with_profile_and_without_fetches():
    doc = document(gradc_cli("run", MLP / "backward.pb", *GIVEN, "--profile", "--json"))
    assert doc["fetched"] == [] and doc["out"] is None
    types = {row["type"]: row for row in doc["profile"]["op_types"]}
    assert types["mul"]["calls"] == 2 and types["mul_grad"]["calls"] == 2 and types["mul"]["seconds"] > 0
    assert doc["profile"]["peak_bytes"] >= max(row["peak_bytes"] for row in types.values()) > 0


def test_run_json_of_bad_input_prints_nothing_and_writes_nothing(tmp_path):
    out = tmp_path / "results.npz"
    line = refused(gradc_cli("run", MLP / "forward.pb", *GIVEN, "--fetch", "nowhere", "--out", out, "--json"))
    assert "nowhere" in line and not out.exists()
    assert "No such file" in refused(gradc_cli("run", tmp_path / "missing.pb", "--json"))
    assert "--out -" in refused(gradc_cli("run", MLP / "forward.pb", *GIVEN, "--json", "--out", "-"), code=2)


def test_check_json_lists_every_var_it_compared():
    doc = document(gradc_cli("check", MLP / "forward.pb", *GIVEN, "--json"))
    assert (doc["program"], doc["loss"], doc["ok"], doc["problems"]) == (str(MLP / "forward.pb"), "mean_0.tmp_0",
                                                                         True, [])
    assert (doc["rtol"], doc["atol"]) == (1e-5, 1e-7)
    assert [(v["var"], v["size"], v["checked"], v["ok"], v["mismatch"]) for v in doc["vars"]] == [
        ("fc_0.b_0", 32, 20, True, None), ("fc_0.w_0", 512, 20, True, None), ("fc_1.b_0", 10, 10, True, None),
        ("fc_1.w_0", 320, 20, True, None)]
    assert all(0 <= v["max_abs_error"] < 1e-8 and v["directions"] == 0 for v in doc["vars"])


@pytest.mark.parametrize("along", [(), ("--directions", "2")])
def test_check_json_names_each_wrong_gradient(monkeypatch, along):
    monkeypatch.setitem(KERNELS, "relu_grad", lambda ctx: {"X@GRAD": ctx.x("Out@GRAD")})   # the mask forgotten
    doc = document(gradc_cli("check", MLP / "forward.pb", *GIVEN, *along, "--json"), code=1)
    assert doc["ok"] is False
    wrong = {v["var"]: v for v in doc["vars"] if not v["ok"]}
    assert sorted(wrong) == ["fc_0.b_0", "fc_0.w_0"]   # the relu sits between them and the loss
    assert [(p["var"], p["block"], p["op"], p["op_type"]) for p in doc["problems"]] == [
        (name, None, None, None) for name in sorted(wrong)]
    for problem in doc["problems"]:
        mismatch = wrong[problem["var"]]["mismatch"]
        assert mismatch["compiled"] != pytest.approx(mismatch["numeric"], rel=1e-5, abs=1e-7)
        if along:
            assert mismatch["index"] is None and 0 <= mismatch["direction"] < 2
            assert f"along direction {mismatch['direction']}" in problem["message"]
        else:
            rank = {"fc_0.w_0": 2, "fc_0.b_0": 1}[problem["var"]]
            assert mismatch["direction"] is None and len(mismatch["index"]) == rank
            assert f"at {mismatch['index']}" in problem["message"]


def test_check_json_of_bad_input_prints_nothing():
    assert "'nowhere'" in refused(gradc_cli("check", MLP / "forward.pb", *GIVEN, "--wrt", "nowhere", "--json"))
    assert "loss 'nowhere'" in refused(gradc_cli("check", MLP / "backward.pb", *GIVEN, "--loss", "nowhere", "--json"))


@pytest.fixture
def broken(tmp_path):
    program = gradc.load(MLP / "backward.pb")
    program.global_block.ops[0].inputs["X"] = ["nowhere"]
    program.global_block.vars["mean_0.tmp_0"].shape = [7]
    path = tmp_path / "broken.pb"
    gradc.save(program, path)
    return path


def test_verify_json_gives_each_problem_where_it_is(broken):
    doc = document(gradc_cli("verify", MLP / "backward.pb", broken, "--json"), code=1)
    good, bad = doc["programs"]
    assert doc["ok"] is False
    assert good == {"file": str(MLP / "backward.pb"), "ok": True, "blocks": 1, "ops": 15, "unknown_op_types": [],
                    "problems": []}
    assert (bad["file"], bad["ok"], bad["blocks"], bad["ops"]) == (str(broken), False, 1, 15)
    assert [(p["block"], p["op"], p["op_type"], p["var"]) for p in bad["problems"]] == [
        (0, 0, "mul", "nowhere"), (0, 6, "reduce_mean", "mean_0.tmp_0")]
    assert bad["problems"][0]["message"] == ("block 0, op 0 (mul) reads var 'nowhere' (slot X), which is not "
                                             "declared in block 0 or its ancestors")
    assert document(gradc_cli("verify", "--json", MLP / "backward.pb"))["ok"] is True


def test_verify_json_of_an_unreadable_program_prints_nothing(broken, tmp_path):
    (tmp_path / "cut.pb").write_bytes((MLP / "backward.pb").read_bytes()[:300])
    assert "cut.pb" in refused(gradc_cli("verify", broken, tmp_path / "cut.pb", "--json"))
    refused(gradc_cli("verify", "--json"), code=2)


@pytest.mark.parametrize("line, fields", [
    ("p.pb: block 1 (parent 0, 14 ops) never runs: no op that block 0 runs names it", (1, None, None, None)),
    ("p.pb: block 0, op 9 (sum) writes 'w@GRAD', which block 0, op 4 (mul_grad) wrote and nothing read",
     (0, 9, "sum", "w@GRAD")),
    ("p.pb: the op version map names 'a\\x01', which is not printable text", (None, None, None, None))])
def test_problem_fields_read_the_place_a_problem_names(line, fields):
    found = problem_fields(line, "p.pb")
    assert (found["block"], found["op"], found["op_type"], found["var"]) == fields
    assert found["message"] == line.removeprefix("p.pb: ")


def test_diff_json_lists_every_difference_with_its_place():
    doc = document(gradc_cli("diff", MLP / "forward.pb", MLP / "backward.pb", "--json"), code=1)
    text = gradc_cli("diff", MLP / "forward.pb", MLP / "backward.pb").stdout.splitlines()
    assert (doc["first"], doc["second"], doc["same"], doc["ignored_attrs"]) == (
        str(MLP / "forward.pb"), str(MLP / "backward.pb"), False, [])
    assert [d["message"] for d in doc["differences"]] == [line.strip() for line in text[1:]]   # text[0]: counts
    changed = [d for d in doc["differences"] if d["change"] == "changed"]
    assert changed == [{"block": 0, "kind": "op", "change": "changed", "var": None, "op": 6, "op_second": 6,
                        "op_type": "reduce_mean", "message": "~ op 6 reduce_mean: attr op_role: 0 -> 256"}]
    added_vars = [d["var"] for d in doc["differences"] if d["kind"] == "var"]
    added_ops = [(d["op"], d["op_second"], d["op_type"]) for d in doc["differences"] if d["kind"] == "op"
                 and d["change"] == "added"]
    assert len(added_vars) == 12 and "fc_0.w_0@GRAD" in added_vars
    assert added_ops[0] == (None, 7, "fill_constant") and len(added_ops) == 8
    same = document(gradc_cli("diff", MLP / "forward.pb", MLP / "forward.pb", "--json", "--ignore-attr", "op_*"))
    assert (same["same"], same["differences"], same["ignored_attrs"]) == (True, [], ["op_*"])


def test_diff_json_of_blocks_only_one_program_has():
    doc = document(gradc_cli("diff", MLP / "forward.pb", DATA / "cond" / "forward.pb", "--json"), code=1)
    blocks = [d for d in doc["differences"] if d["kind"] == "block"]
    assert blocks and all(d["change"] == "added" and d["block"] >= 1 for d in blocks)
    assert "only in the second program" in blocks[0]["message"]


def test_diff_json_of_bad_input_prints_nothing(tmp_path):
    assert "missing.pb" in refused(gradc_cli("diff", MLP / "forward.pb", tmp_path / "missing.pb", "--json"))


def test_run_json_gives_a_fetched_lod(tmp_path):
    rows = DATA / "layers" / "sequence_pool_max"
    np.savez(tmp_path / "feed.npz", **np.load(rows / "feed.npz"), **{"x@LOD0": np.array([0, 2, 5, 6])})
    doc = document(gradc_cli("run", rows / "forward.pb", "--feed", tmp_path / "feed.npz", "--fetch", "x", "--fetch",
                             "sequence_pool_0.tmp_1", "--json"))
    x, index = doc["fetched"]
    assert (x["lod"], x["shape"]) == ([[0, 2, 5, 6]], [6, 3])
    assert "lod" not in index and (index["dtype"], index["shape"], index["min"]) == ("int32", [3, 3], 0)
    assert "nan" not in index   # an int tensor holds none
