"""Rows: paddle.incubate.layers (PaddleRec's layers): partial_sum, partial_concat, shuffle_batch, the tree-based
deep model's tdm_child and tdm_sampler (their trees held in int32 parameters, as the layers create them), and the
GPU-only batch_fc, rank_attention, correlation and fused_seqpool_cvm, whose fixtures record Paddle's CPU error.
shuffle_batch permutes from std::random_device: its row's loss is one no permutation changes."""

import numpy as np
import paddle
import paddle.incubate.layers as L

from .spec import f, given, pos, seq, table

# node: item id, layer, parent, two children (Paddle's TreeInfo); node 6 has no children and no item
TREE = np.array([[0, 0, 0, 1, 2], [0, 1, 0, 3, 4], [0, 1, 0, 5, 6], [10, 2, 1, 0, 0], [11, 2, 1, 0, 0],
                 [12, 2, 2, 0, 0], [0, 2, 2, 0, 0]], "int32")
TRAVEL = np.array([[1, 3], [1, 4], [2, 5], [2, 6]], "int32")   # each leaf's path, a node per layer
LAYERS = np.array([[1], [2], [3], [4], [5], [6]], "int32")      # the nodes of layer 1, then of layer 2


def _held(values: np.ndarray) -> paddle.ParamAttr:
    return paddle.ParamAttr(initializer=paddle.nn.initializer.Assign(values))


def _tdm_child(ids):
    return L.tdm_child(ids, node_nums=7, child_nums=2, param_attr=_held(TREE))


def _tdm_sampler(ids, negatives, positive=True, seed=7):
    return L.tdm_sampler(ids, neg_samples_num_list=negatives, layer_node_num_list=[2, 4], leaf_node_num=4,
                         tree_travel_attr=_held(TRAVEL), tree_layer_attr=_held(LAYERS), output_positive=positive,
                         output_list=False, seed=seed)


def _as_float(values):
    return values.astype("float32")


ROWS = table(
    "incubate",
    ("partial_sum", lambda a, b: L.partial_sum([a, b], start_index=1, length=3), f(4, 6), f(4, 6)),
    ("partial_sum_to_end", lambda a, b, c: L.partial_sum([a, b, c], start_index=2), f(3, 5), f(3, 5), f(3, 5)),
    ("partial_concat", lambda a, b: L.partial_concat([a, b], start_index=1, length=3), f(4, 6), f(4, 6)),
    ("partial_concat_from_end", lambda a, b: L.partial_concat([a, b], start_index=-2), f(3, 5), f(3, 5)),
    ("shuffle_batch", lambda x: (L.shuffle_batch(x, seed=5) ** 2).sum(), f(6, 3)),
    ("tdm_child", lambda x, ids: [x * _as_float(out) for out in _tdm_child(ids)], f(4, 1, 2),
     given([[1], [2], [3], [0]], "int32")),
    ("tdm_sampler", lambda x, ids: [x * _as_float(out) for out in _tdm_sampler(ids, [1, 2])], f(4, 5),
     given([[0], [1], [2], [3]], "int32")),
    ("tdm_sampler_negatives_only", lambda x, ids: x * _as_float(_tdm_sampler(ids, [1, 3], False, 11)[0]), f(4, 4),
     given([[3], [0], [2], [1]], "int32")),
    ("batch_fc", lambda x: L.batch_fc(x, [2, 4, 3], None, [2, 3], None, "relu"), f(2, 5, 4)),
    ("rank_attention", lambda x, offset: L.rank_attention(x, offset, [2 * 2 * 3, 4], None, max_rank=2), f(4, 3),
     given([[1, 1, 0, 2, 1], [2, 1, 0, 2, 1], [1, 1, 2, 2, 3], [2, 1, 2, 2, 3]], "int32")),
    ("correlation", lambda a, b: L.correlation(a, b, 2, 1, 2, 1, 1), f(1, 3, 6, 6), f(1, 3, 6, 6)),
    ("fused_seqpool_cvm", lambda x, cvm: L.fused_seqpool_cvm([x], "sum", cvm)[0], seq(4, lengths=(2, 3)),
     pos(2, 2)),
)
