"""Cases for gradc.ops.reshard on a mesh of one rank, where each reshard is exactly defined: a shard of one rank
is the whole value, a partial sum over one rank is the value, a sum's parts put the whole at the rank. The reshard
across ranks is tests/test_reshard.py's."""

import json

from . import Case, rng
from .second_order import second_order

r = rng(83)
ONE = {"#": "4.a_process_mesh", "D": [[1], [0], ["x"]]}


def placements(src: tuple, dst: tuple) -> dict:
    """The op_dist_attr of a reshard on the one-rank mesh: src and dst are (dims_mapping, partial [(axis, type)])."""
    dists = [{"#": "4.a_tensor_dist", "D": [ONE, list(mapping), [list(p) for p in partial]]}
             for mapping, partial in (src, dst)]
    return {"op_dist_attr": json.dumps({"#": "4.a_op_dist", "D": [ONE, [dists[0]], [dists[1]], -1]})}


VARIANTS = [(([-1, -1], []), ([0, -1], [])), (([-1, 0], []), ([-1, -1], [])), (([-1, -1], [(0, 0)]), ([-1, -1], [])),
            (([-1, -1], []), ([-1, -1], [(0, 0)])), (([0, -1], [(0, 1)]), ([-1, 0], [])),
            (([-1, -1], [(0, 4)]), ([0, -1], []))]
CASES = [Case("reshard", {"x": r.standard_normal((3, 4))}, placements(*variant)) for variant in VARIANTS]
CASES += [second_order("reshard", {"x": r.standard_normal((2, 3))}, placements(*variant), grad_type="reshard")
          for variant in VARIANTS[:3]]
