"""PIR programs of Paddle 3.3.1's GPU-only MoE permutation ops (moe_permute, moe_unpermute) and the experts' grouped
GEMM (batched_gemm), written as tools/paddle_gpu_only_translated.py writes its cases (legacy ops put into a
ProgramDesc, named by Paddle's translator) into tests/data/paddle/pir_gpu_only/<case>/, with feeds drawn here per
case (the routes fixed, so that tokens_per_expert can count them). Paddle 3.3.1 registers no grad op for any of the
three (the translator knows no pd_op.moe_permute_grad, moe_unpermute_grad or batched_gemm_grad), so the programs
are forward only. tests/test_moe_permute.py runs them. Not part of the package: it needs paddlepaddle.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_moe_permute_translated.py [case ...]
"""

from __future__ import annotations

import json
import sys
import warnings

import numpy as np
import paddle
import paddle_gpu_only_translated as translated

F32 = "float32"
# 6 tokens top 2 over 4 experts, three choices -1 (dropped); counts [2, 3, 0, 4]
ROUTES = np.array([[1, 3], [3, -1], [0, 1], [-1, 3], [1, 0], [3, -1]], np.int32)
COUNTS = [int(np.count_nonzero(ROUTES == e)) for e in range(4)]
ALIGN = 2
ROWS = sum((count + ALIGN - 1) // ALIGN * ALIGN for count in COUNTS)


def _permute_unpermute() -> dict:
    """moe_permute of x [6, 8] (tokens_per_expert padded to 2 rows, expert indices returned), then moe_unpermute
    (weighted) of fed expert outputs with its rowmap and row probabilities."""
    feeds = {"x": ([6, 8], F32), "routes": ([6, 2], "int32"), "probs": ([6, 2], F32),
             "expert_out": ([ROWS, 8], F32)}
    permute_attrs = {"num_experts": 4, "tokens_per_expert": COUNTS, "padding_alignment": ALIGN, "do_gather": True,
                     "using_ue8m0_scale": False, "return_expert_indices": True, "override_buffer_size": -1}
    outs = {"hidden_states_unzipped": ("rows", [ROWS, 8]), "zipped_expertwise_rowmap": ("rowmap", [6, 4], "int32"),
            "token_prob_unzipped": ("row_probs", [ROWS]), "scale_unzipped": ("row_scales", [ROWS, 0]),
            "expert_indices": ("row_experts", [ROWS], "int32")}
    unpermute_ins = {"hidden_states_unzipped": ["expert_out"], "zipped_expertwise_rowmap": ["rowmap"],
                     "expert_routemap_topk": ["routes"], "token_prob_unzipped": ["row_probs"]}
    unpermute_attrs = {"total_zipped_tokens_num": 6, "num_experts": 4, "use_mix_precision": False,
                       "using_weighted_combine": True}
    return {"feeds": feeds, "ops": [
        ("moe_permute", {"hidden_states": ["x"], "expert_routemap_topk": ["routes"], "expert_prob_topk": ["probs"]},
         outs, permute_attrs),
        ("moe_unpermute", unpermute_ins, {"hidden_states": ("combined", [6, 8]), "expert_prob_topk": ("topk", [6, 2])},
         unpermute_attrs)]}


def _permute_unpermute_feed(rng) -> dict:
    return {"x": rng.standard_normal((6, 8)).astype(F32), "routes": ROUTES,
            "probs": rng.uniform(0.1, 1.0, (6, 2)).astype(F32),
            "expert_out": rng.standard_normal((ROWS, 8)).astype(F32)}


SIZES = [3, 0, 4]


def _gemm() -> dict:
    """batched_gemm of lhs [7, 4] in groups [3, 0, 4] with rhs [3, 4, 5], with rhs_t [3, 5, 4] (trans_rhs), and
    lhs^T times dout [7, 5] group by group (trans_lhs: a weight grad's layout)."""
    feeds = {"lhs": ([7, 4], F32), "rhs": ([3, 4, 5], F32), "rhs_t": ([3, 5, 4], F32), "dout": ([7, 5], F32)}
    sizes = ("_set_int64s_attr", SIZES)
    return {"feeds": feeds, "ops": [
        ("batched_gemm", {"lhs": ["lhs"], "rhs": ["rhs"]}, {"output": ("out", [7, 5])},
         {"batch_sizes": sizes, "trans_lhs": False, "trans_rhs": False}),
        ("batched_gemm", {"lhs": ["lhs"], "rhs": ["rhs_t"]}, {"output": ("out_t", [7, 5])},
         {"batch_sizes": sizes, "trans_lhs": False, "trans_rhs": True}),
        ("batched_gemm", {"lhs": ["lhs"], "rhs": ["dout"]}, {"output": ("weight_grad", [3, 4, 5])},
         {"batch_sizes": sizes, "trans_lhs": True, "trans_rhs": False})]}


def _gemm_feed(rng) -> dict:
    return {name: rng.standard_normal(shape).astype(F32) for name, (shape, _) in _gemm()["feeds"].items()}


# expert 1 chosen twice, expert 2 six times
PARTIAL_IDS = np.array([[0, 2], [2, 3], [1, 2], [2, 0], [3, 2], [2, 1]], np.int32)


def _partial(use_pad: bool, reverse: bool) -> dict:
    """moe_gate_dispatch_partial_nosoftmaxtopk of 6 tokens top 2 to experts 1 .. 2 of 4 (capacity 3: expert 2's five
    choices cut to 3) and its grad op at fed dy and dweights."""
    rows = 2 * 3 if use_pad else 2 + 3
    feeds = {"x": ([6, 8], F32), "weights": ([6, 2], F32), "ids": ([6, 2], "int32"), "dy": ([rows, 8], F32),
             "dweights": ([6, 2], F32)}
    attrs = {"k": ("_set_int64_attr", 2), "capacity": ("_set_int64_attr", 3),
             "num_experts": ("_set_int64_attr", 4), "use_pad": use_pad,
             "expert_start_index": ("_set_int64_attr", 1), "expert_end_index": ("_set_int64_attr", 3),
             "reverse_token_drop": reverse}
    outs = {"y": ("y", [rows, 8]), "combine_weights_out": ("weights_out", [6, 2]),
            "scatter_index": ("scatter_index", [2, 6], "int32"), "scatter_index_rev": ("scatter_index_rev", [rows],
                                                                                       "int32"),
            "expert_offset": ("expert_offset", [4], "int64"), "expert_nums_local": ("expert_nums_local", [4], "int64")}
    grad_ins = {"combine_weights_out": ["weights_out"], "scatter_index": ["scatter_index"],
                "scatter_index_rev": ["scatter_index_rev"], "expert_offset": ["expert_offset"],
                "expert_nums_local": ["expert_nums_local"], "y@GRAD": ["dy"],
                "combine_weights_out@GRAD": ["dweights"]}
    grads = {"x@GRAD": ("x@GRAD", [6, 8]), "combine_weights@GRAD": ("weights@GRAD", [6, 2])}
    op = "moe_gate_dispatch_partial_nosoftmaxtopk"
    return {"feeds": feeds, "ops": [(op, {"x": ["x"], "combine_weights": ["weights"], "expert_id": ["ids"]}, outs,
                                     attrs), (f"{op}_grad", grad_ins, grads, attrs)]}


def _partial_feed(use_pad: bool):
    def draw(rng) -> dict:
        rows = 6 if use_pad else 5
        return {"x": rng.standard_normal((6, 8)).astype(F32), "weights": rng.uniform(0.1, 1.0, (6, 2)).astype(F32),
                "ids": PARTIAL_IDS, "dy": rng.standard_normal((rows, 8)).astype(F32),
                "dweights": rng.standard_normal((6, 2)).astype(F32)}

    return draw


def write(case: str, seed: int) -> str:
    spec, draw = CASES[case]
    program, fetches = translated.translated_program(spec)
    directory = translated.saved(program, case)
    np.savez_compressed(directory / "feed.npz", **draw(np.random.default_rng(seed)))
    ops = sorted({op.name() for op in program.global_block().ops} - {"pd_op.fetch"})
    meta = {"case": case, "paddle_version": paddle.__version__, "fetches": fetches, "pir_ops": ops,
            "built_by": "legacy ops written into a ProgramDesc, translated by Paddle"}
    (directory / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return f"{ops}"


CASES = {"moe_permute_unpermute": (_permute_unpermute(), _permute_unpermute_feed),
         "batched_gemm_variants": (_gemm(), _gemm_feed),
         "moe_dispatch_partial_pad": (_partial(True, False), _partial_feed(True)),
         "moe_dispatch_partial_reverse_drop": (_partial(False, True), _partial_feed(False))}
SEEDS = {"moe_permute_unpermute": 510, "batched_gemm_variants": 511, "moe_dispatch_partial_pad": 512,
         "moe_dispatch_partial_reverse_drop": 513}

if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    paddle.enable_static()
    for case in CASES:   # the cases named on the command line, or all
        if not sys.argv[1:] or case in sys.argv[1:]:
            print(f"{case}: {write(case, SEEDS[case])}")
    sys.exit(0)
