"""Semi-auto-parallel PIR programs as Paddle 3.3.1's dist.to_static writes them (tests/data/paddle/auto_parallel,
made by tools/paddle_auto_parallel.py): dist types and op_dist_attr on every value and op, the reshard pass's
collectives. gradc reads each rank's part from the dist types, and all ranks run together give the single-device
model's loss and Momentum step (column- and row-parallel Linears, the batch split over the data-parallel axis)."""

import json
from pathlib import Path

import numpy as np
import pytest

import gradc
from gradc.executor.ranks import run_ranks
from gradc.pir import save_pir
from gradc.pir.dist import rank_values, spread
from gradc.pir.dump import dumps
from gradc.pir.reader import read_module

DATA = Path(__file__).parent / "data" / "paddle" / "auto_parallel"


def reference(case: dict) -> dict:
    with np.load(DATA / f"reference_{'momentum' if case['stage'] is None else 'adamw'}.npz") as archive:
        return dict(archive)


def rings(case: dict) -> dict[int, list[list[int]]]:
    """ring_id -> its groups, from each rank's process groups (a ring_id names a communicator of each process)."""
    groups: dict[int, list[list[int]]] = {}
    for info in case["ranks"]:
        for ring, ranks in info["rings"].items():
            if ranks not in groups.setdefault(int(ring), []):
                groups[int(ring)].append(ranks)
    return groups


def rank_part(program: gradc.Program, name: str, value, rank: int) -> np.ndarray:
    return spread(program.global_block.vars[name].dist).local_part(value, rank)


def run_case(case_name: str, programs: list[gradc.Program], fetch_lists=None, startup_case: str | None = None):
    """Every rank's program together, from its startup values (those of ``startup_case``, when given) and the
    reference's parameters and rows (each rank its block of them): (each rank's loss, None where ``fetch_lists``
    fetches none, each rank's scope after the step)."""
    case = json.loads((DATA / "meta.json").read_text())["cases"][case_name]
    ref, scopes, feeds = reference(case), [], []
    for rank, (program, info) in enumerate(zip(programs, case["ranks"])):
        startup = gradc.Scope()   # its states are whole (replicated): each rank holds its block of the sharded ones
        startup_file = DATA / (startup_case or case_name) / f"rank{rank}" / "startup.json"
        gradc.Executor().run(gradc.load(startup_file), scope=startup)
        params = {name: ref[f"param.{name.removesuffix('.dist')}"] for name in info["params"]}
        scope = gradc.Scope()
        for name, value in rank_values(program, dict(startup.vars) | params, rank).items():
            scope[name] = np.array(value, copy=True)
        scopes.append(scope)
        rows = rank_values(program, {"input0": ref["feed.x"], "label0": ref["feed.label"]}, rank)
        feeds.append({name: value for name, value in rows.items() if name in program.global_block.vars})
    values = run_ranks(programs, feeds, fetch_lists or ["loss_0"], scopes, rings=rings(case))
    return [fetched[0] if fetched else None for fetched in values], scopes


def check_step(case_name: str, programs: list[gradc.Program]) -> None:
    case = json.loads((DATA / "meta.json").read_text())["cases"][case_name]
    ref = reference(case)
    losses, scopes = run_case(case_name, programs)
    np.testing.assert_allclose(np.mean(losses), ref["loss"], rtol=1e-6)
    for rank, (program, scope) in enumerate(zip(programs, scopes)):
        for name in case["ranks"][rank]["params"]:
            stepped = rank_part(program, name, ref[f"stepped.{name.removesuffix('.dist')}"], rank)
            np.testing.assert_allclose(scope[name], stepped, rtol=1e-5, atol=1e-7)


def load_case(case_name: str, form: str = "train.json") -> list[gradc.Program]:
    count = len(json.loads((DATA / "meta.json").read_text())["cases"][case_name]["ranks"])
    return [gradc.load(DATA / case_name / f"rank{rank}" / form) for rank in range(count)]


@pytest.mark.parametrize("case_name", ["dp_mp", "shared", "sharding2", "sharding3"])
def test_every_rank_together_gives_the_single_device_loss_and_step(case_name):
    check_step(case_name, load_case(case_name))


def test_each_rank_holds_its_block_as_the_dist_types_say():
    """ZeRO stage 2 halves the AdamW moments, stage 3 the parameters too; dp_mp's column-parallel weight is split
    over mp (its columns), the batch over dp."""
    for case_name, halved in (("sharding2", {"linear_0.w_0_moment1_0"}),
                              ("sharding3", {"linear_0.w_0", "linear_0.w_0_moment1_0"})):
        block = load_case(case_name)[1].global_block
        for name in ("linear_0.w_0", "linear_0.w_0_moment1_0"):
            assert block.vars[name].shape == ([3, 8] if name in halved else [6, 8])
            assert tuple(block.vars[name].dist[0]) == (6, 8)
    block = load_case("dp_mp")[3].global_block   # rank 3: dp 1, mp 1
    weight, rows = spread(block.vars["linear_0.w_0.dist"].dist), spread(block.vars["input0"].dist)
    assert (weight.coordinates(3), weight.dims_mapping, rows.dims_mapping) == ((1, 1), (-1, 1), (0, -1))
    assert block.vars["linear_0.w_0.dist"].shape == [6, 4] and block.vars["input0"].shape == [4, 6]
    np.testing.assert_array_equal(weight.local_part(np.arange(48).reshape(6, 8), 3), np.arange(48).reshape(6, 8)[:, 4:])


def ops_of(document: dict) -> list[dict]:
    return document["program"]["regions"][0]["blocks"][0]["ops"]


@pytest.mark.parametrize("form", ["train.json", "reshard.json"])
def test_reading_and_writing_keeps_every_dist_type_and_attribute(form):
    """Paddle's file read and written again: every op's attributes (op_dist_attr), operands, result types
    (t_dist_dtensor) and a parameter's dist attributes (DA) as Paddle wrote them; reshard.json holds the
    dist_op.reshard ops the reshard pass lowers."""
    raw = (DATA / "dp_mp" / "rank0" / form).read_bytes()
    source, written = ops_of(json.loads(raw)), ops_of(json.loads(dumps(read_module(raw))))
    kept = ("#", "A", "I", "O", "DA")
    assert [{key: op.get(key) for key in kept} for op in written] == [{key: op.get(key) for key in kept}
                                                                       for op in source]
    assert raw.count(b'"4.t_dist_dtensor"') > 50 and raw.count(b'"op_dist_attr"') == len(source)
    assert (b'"dist_op.reshard"' in raw) == (form == "reshard.json")


def test_a_program_saved_as_pir_keeps_its_dist_types_and_op_dist_attrs_and_still_runs(tmp_path):
    """gradc.load -> save_pir -> gradc.load: every var keeps its dist type, every op gradc writes back as the
    same PIR op keeps its op_dist_attr (data, constants, shadow_output and assign_out_ become gradc's feeds,
    folded attributes and assigns; parameters are written afresh, their dist types kept), and the ranks' saved
    programs still give the single-device step."""
    programs = load_case("shared")
    saved = []
    for rank, program in enumerate(programs):
        save_pir(program, tmp_path / f"rank{rank}.json")
        saved.append(gradc.load(tmp_path / f"rank{rank}.json"))
        spread_vars = {name: (var.shape, var.dist) for name, var in program.global_block.vars.items() if var.dist}
        assert len(spread_vars) > 40
        assert {name: (saved[-1].global_block.vars[name].shape, saved[-1].global_block.vars[name].dist)
                for name in spread_vars} == spread_vars
        rewritten = ("pd_op.data", "pd_op.full", "pd_op.full_int_array", "builtin.shadow_output", "pd_op.assign_out_",
                     "pd_op.assign", "builtin.parameter")
        attrs = [sorted((op.name, json.dumps(op.attrs["op_dist_attr"].value)) for op in module.body.ops
                        if "op_dist_attr" in op.attrs and op.name not in rewritten)
                 for module in (read_module((DATA / "shared" / f"rank{rank}" / "train.json").read_bytes()),
                                read_module((tmp_path / f"rank{rank}.json").read_bytes()))]
        assert len(attrs[0]) > 20 and attrs[0] == attrs[1]
    check_step("shared", saved)


def test_a_broken_dist_type_is_a_one_line_error(tmp_path):
    text = (DATA / "shared" / "rank0" / "train.json").read_text()
    broken = tmp_path / "broken.json"
    broken.write_text(text.replace('"4.t_dist_dtensor","D":[', '"4.t_dist_dtensor","D":[[],', 1))
    with pytest.raises(gradc.FormatError, match=r"^.*broken\.json: region 0, block 0, op 0 \(pd_op\.data\), result 0: "
                                                r"type t_dist_dtensor needs D = \[dense type, tensor_dist, local "
                                                r"dims\]"):
        gradc.load(broken)
