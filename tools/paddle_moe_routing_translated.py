"""PIR programs of Paddle 3.3.1's GPU-only MoE index ops (number_count, assign_pos, limit_by_capacity,
prune_gate_by_capacity, random_routing: the older MoE layer's gate; int_bincount, expand_modality_expert_id,
build_src_rank_and_local_expert_id: PaddleNLP's helpers; global_scatter and global_gather at one rank), written as
tools/paddle_gpu_only_translated.py writes its cases (legacy ops put into a ProgramDesc, named by Paddle's translator)
into tests/data/paddle/pir_gpu_only/<case>/, with feeds drawn here per case (routes with dropped -1 entries, running
counts that agree with them) and, for int_bincount, Paddle's CPU numbers of its own composition (math_int_bincount,
the XPU path) in paddle_cpu_composition.npz. tests/test_moe_routing.py runs them. Not part of the package: it needs
paddlepaddle.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_moe_routing_translated.py [case ...]
"""

from __future__ import annotations

import json
import sys
import warnings

import numpy as np
import paddle
import paddle_gpu_only_translated as translated

I64 = "int64"
translated.PIR_RESULT_NAMES["NewGateIdx"] = "out_gate_idx"   # prune_gate_by_capacity's result
TOKENS, EXPERTS = 7, 4


def _gate() -> dict:
    """The older MoE layer's gate at world size 1 over 7 tokens, top 2, 4 experts, capacity 3: the counts, the
    positions (assign_pos of the fed running counts), the capacity limit, the pruned routes, and random_routing."""
    ins_gate = {"numbers": ["gate"]}
    return {"feeds": {"gate": ([TOKENS, 2], I64), "cum_count": ([EXPERTS], I64), "eff_num_len": ([1], I64),
                      "capacity": ([EXPERTS], I64), "prob": ([TOKENS], "float32"),
                      "topk_value": ([TOKENS, 2], "float32")},
            "ops": [("number_count", ins_gate, {"Out": ("counts", [EXPERTS], I64)}, {"upper_range": EXPERTS}),
                    ("assign_pos", {"X": ["gate"], "cum_count": ["cum_count"], "eff_num_len": ["eff_num_len"]},
                     {"Out": ("pos", [-1], I64)}, {}),
                    ("limit_by_capacity", {"expert_count": ["counts"], "capacity": ["capacity"]},
                     {"Out": ("limited", [EXPERTS], I64)}, {"n_worker": 1}),
                    ("prune_gate_by_capacity", {"GateIdx": ["gate"], "ExpertCount": ["limited"]},
                     {"NewGateIdx": ("pruned", [TOKENS, 2], I64)},
                     {"n_expert": ("_set_int64_attr", EXPERTS), "n_worker": ("_set_int64_attr", 1)}),
                    ("random_routing", {"Prob": ["prob"], "TopK_Value": ["topk_value"], "TopK_Idx": ["gate"]},
                     {"Out": ("routed", [TOKENS, 2], I64)}, {})]}


def _gate_feed(rng) -> dict:
    gate = rng.integers(0, EXPERTS, (TOKENS, 2))
    gate[[1, 4], [1, 0]] = -1   # two choices already dropped
    counts = np.bincount(gate[gate >= 0], minlength=EXPERTS)
    cum = np.cumsum(counts)
    return {"gate": gate, "cum_count": cum, "eff_num_len": cum[-1:], "capacity": np.full(EXPERTS, 3, np.int64),
            "prob": rng.random(TOKENS).astype(np.float32),
            "topk_value": rng.uniform(0.0, 0.6, (TOKENS, 2)).astype(np.float32)}


EXPERT_NUM = [2, 0, 3, 1]


def _helpers(dtype: str) -> dict:
    """int_bincount of ids [3, 5] over [1, 5) in the dtype, expand_modality_expert_id of expert_id [3, 2] (groups of
    3, 2 experts per modality, the second modality), build_src_rank_and_local_expert_id of 4 experts' counts on 2
    ranks."""
    code = int(paddle.base.core.VarDesc.VarType.INT32 if dtype == "int32" else paddle.base.core.VarDesc.VarType.INT64)
    rows = sum(EXPERT_NUM)
    return {"feeds": {"ids": ([3, 5], I64), "expert_id": ([3, 2], I64), "expert_num": ([4], I64)},
            "ops": [("int_bincount", {"x": ["ids"]}, {"out": ("bins", [4], dtype)},
                     {"low": ("_set_int64_attr", 1), "high": ("_set_int64_attr", 5),
                      "dtype": ("_set_int64_attr", code)}),
                    ("expand_modality_expert_id", {"expert_id": ["expert_id"]},
                     {"expert_id_out": ("expanded", [3, 2], I64)},
                     {"num_expert_per_modality": ("_set_int64_attr", 2), "group_size": ("_set_int64_attr", 3),
                      "modality_offset": ("_set_int64_attr", 1), "is_group_expert": True}),
                    ("build_src_rank_and_local_expert_id", {"expert_num_global_tensor": ["expert_num"]},
                     {"vector": ("src_rank", [rows], "int32"), "local_expert_id": ("local_expert_id", [rows],
                                                                                   "int32")},
                     {"expert_num_global": ("_set_int64s_attr", EXPERT_NUM),
                      "num_local_experts": ("_set_int64_attr", 2)})]}


def _helpers_feed(rng) -> dict:
    return {"ids": rng.integers(0, 7, (3, 5)), "expert_id": rng.integers(0, 3, (3, 2)),
            "expert_num": np.array(EXPERT_NUM, np.int64)}


def _exchange() -> dict:
    """global_scatter of 5 rows to 3 experts at world size 1 and global_gather of them back (ring 0)."""
    counts = {"local_count": ["counts"], "global_count": ["counts"]}
    return {"feeds": {"rows": ([5, 3], "float32"), "counts": ([3], I64)},
            "ops": [("global_scatter", {"X": ["rows"], **counts}, {"Out": ("scattered", [-1, 3])}, {"ring_id": 0}),
                    ("global_gather", {"X": ["scattered"], **counts}, {"Out": ("gathered", [-1, 3])}, {"ring_id": 0})]}


def _exchange_feed(rng) -> dict:
    return {"rows": rng.standard_normal((5, 3)).astype(np.float32), "counts": np.array([2, 0, 3], np.int64)}


def bincount_composition(case: str, feed: dict) -> None:
    """Paddle's CPU numbers of its own int_bincount composition (math_int_bincount, its XPU path) on the feed."""
    from paddle.incubate.nn.functional.int_bincount import math_int_bincount

    ops = CASES[case][0]["ops"]
    attrs, dtype = ops[0][3], ops[0][2]["out"][2]
    paddle.disable_static()
    bins = math_int_bincount(paddle.to_tensor(feed["ids"]), attrs["low"][1], attrs["high"][1], dtype)
    np.savez_compressed(translated.OUT / case / "paddle_cpu_composition.npz", bins=bins.numpy())
    paddle.enable_static()


def write(case: str, seed: int) -> str:
    spec, draw = CASES[case]
    program, fetches = translated.translated_program(spec)
    directory = translated.saved(program, case)
    feed = draw(np.random.default_rng(seed))
    np.savez_compressed(directory / "feed.npz", **feed)
    ops = sorted({op.name() for op in program.global_block().ops} - {"pd_op.fetch"})
    meta = {"case": case, "paddle_version": paddle.__version__, "fetches": fetches, "pir_ops": ops,
            "built_by": "legacy ops written into a ProgramDesc, translated by Paddle"}
    (directory / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    if case.startswith("moe_index_helpers"):
        bincount_composition(case, feed)
    return f"{ops}"


CASES = {"moe_gate_count_limit_prune": (_gate(), _gate_feed),
         "moe_index_helpers": (_helpers("int64"), _helpers_feed),
         "moe_index_helpers_int32": (_helpers("int32"), _helpers_feed),
         "moe_exchange_one_rank": (_exchange(), _exchange_feed)}
SEEDS = {"moe_gate_count_limit_prune": 500, "moe_index_helpers": 501, "moe_index_helpers_int32": 502,
         "moe_exchange_one_rank": 503}

if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    paddle.enable_static()
    for case in CASES:   # the cases named on the command line, or all
        if not sys.argv[1:] or case in sys.argv[1:]:
            print(f"{case}: {write(case, SEEDS[case])}")
    sys.exit(0)
