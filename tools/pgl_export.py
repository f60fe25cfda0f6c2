"""Export PGL's own graph layers (pgl.nn's convolutions and poolings) as Paddle 3 saves them (inference.json +
inference.pdiparams, PIR), with their initial weights (seed 0), for tools/real_models.py to check gradc against Paddle
on. Needs paddlepaddle 3.3.1 and a PGL checkout (its pgl/, with pgl/graph_kernel built: PGL's setup.py compiles it
with Cython; only its METIS partitioning, which no layer here uses, may be left out):

    /path/to/paddle/python tools/pgl_export.py PGL_DIR OUT_DIR GCNConv GraphPool@max ...

Each layer (LAYER, or LAYER@VARIANT: an aggregation or a pool type) is built at its smallest (16 features in, 8 out,
one or two heads or hops) and wrapped in a paddle.nn.Layer that makes a pgl.Graph of NODES nodes from its inputs, as
PGL's examples do under paddle.jit.to_static: `edges` [EDGES, 2] int64 and `feature` [NODES, 16] float32 (PinSage also
edge weights, RGCN a second edge list; a pooling's graph holds two graphs, nodes 0-9 and 10-23, and a readout
has a GCNConv before it, which reads the edges; a propagation without parameters a Linear). It is saved in eval
mode by paddle.jit.save, in a process of its own, into OUT_DIR/<entry>/. One line per entry: OK, or FAIL and why.
With FLAGS_enable_pir_api=0 they are saved as legacy programs (inference.pdmodel).
Check them with INT_BOUND=24 (edge ends in [1, 24): node 0 has no edges, so empty segments are exercised).

Deploy@MODEL is PGL's deployable GCN, GAT or GraphSage (examples/gnn_depoly/models: the graph ops on plain tensors),
saved as its export_model.py saves it, every dim free: check those on their own with
FEEDS='{"edge_index": {"shape": [96, 2], "bound": 24}, "num_nodes": {"shape": [1], "fill": 24},
"feature": {"shape": [24, 16]}}'. Sampled@GAT is that GAT on the subgraph PGL's sampling example draws (its
get_sample_graph_list: sample_neighbors, then reindex_graph) around SEEDS nodes of the graph `edges` makes.
"""

from __future__ import annotations

import sys
from pathlib import Path

from suite_export import main

NODES, EDGES, FEATURES, HIDDEN = 24, 96, 16, 8
SEEDS = 6   # the nodes a sampled subgraph is drawn around (node 0 has no in-edges)
GRAPH_NODE_INDEX = [0, 10, NODES]   # a pooling's batch of two graphs
READOUTS = ("GraphPool", "GraphNorm", "Set2Set", "GlobalAttention")
PROPAGATIONS = ("APPNP", "LightGCNConv")

SMALLEST = [
    "GCNConv", "GATConv", "GATv2Conv", "APPNP", "GPRConv", "GCNII", "TransformerConv", "GINConv", "SGCConv", "SSGCConv",
    "NGCFConv", "LightGCNConv", "FAConv", "RGCNConv", "GraphSageConv@sum", "GraphSageConv@mean", "GraphSageConv@max",
    "PinSageConv@sum", "PinSageConv@mean", "PinSageConv@max", "PinSageConv@min", "GraphPool@sum", "GraphPool@mean",
    "GraphPool@max", "GraphPool@min", "GraphNorm", "Set2Set", "GlobalAttention", "SAGPool", "GraphMultisetTransformer",
    "Deploy@GCN", "Deploy@GAT", "Deploy@GraphSage", "Sampled@GAT"]


def _layer(name: str, variant: str):
    """PGL's layer ``name`` at its smallest, and how it is called: (layer, call(layer, graph, feature, extra))."""
    import paddle
    import pgl.nn as gnn
    conv = {
        "GCNConv": lambda: gnn.GCNConv(FEATURES, HIDDEN, activation="relu"),
        "GATConv": lambda: gnn.GATConv(FEATURES, HIDDEN, num_heads=2, activation="elu"),
        "GATv2Conv": lambda: gnn.GATv2Conv(FEATURES, HIDDEN, num_heads=2, activation="elu"),
        "APPNP": lambda: gnn.APPNP(alpha=0.1, k_hop=2),
        "GPRConv": lambda: gnn.GPRConv(FEATURES, HIDDEN, HIDDEN, k_hop=2),
        "GCNII": lambda: gnn.GCNII(FEATURES, k_hop=2),
        "TransformerConv": lambda: gnn.TransformerConv(FEATURES, HIDDEN, num_heads=2),
        "GINConv": lambda: gnn.GINConv(FEATURES, HIDDEN, activation="relu", train_eps=True),
        "SGCConv": lambda: gnn.SGCConv(FEATURES, HIDDEN, k_hop=2, cached=False, bias=True),
        "SSGCConv": lambda: gnn.SSGCConv(FEATURES, HIDDEN, k_hop=2, cached=False, bias=True),
        "NGCFConv": lambda: gnn.NGCFConv(FEATURES, HIDDEN),
        "LightGCNConv": lambda: gnn.LightGCNConv(),
        "FAConv": lambda: gnn.FAConv(FEATURES),
        "GraphSageConv": lambda: gnn.GraphSageConv(FEATURES, HIDDEN, aggr_func=variant),
        "GraphPool": lambda: gnn.GraphPool(pool_type=variant),
        "GraphNorm": lambda: gnn.GraphNorm(),
        "Set2Set": lambda: gnn.Set2Set(FEATURES, n_iters=2),
        "GlobalAttention": lambda: gnn.GlobalAttention(paddle.nn.Linear(FEATURES, 1),
                                                       paddle.nn.Linear(FEATURES, HIDDEN)),
        # SAGPool's default scorer names a GCNConv its module does not import
        "SAGPool": lambda: gnn.SAGPool(FEATURES, ratio=0.5, gnn=gnn.GCNConv),
        "GraphMultisetTransformer": lambda: gnn.GraphMultisetTransformer(FEATURES, HIDDEN, HIDDEN, num_nodes=12,
                                                                         num_heads=2),
    }
    if name == "PinSageConv":
        return gnn.PinSageConv(FEATURES, HIDDEN, aggr_func=variant), lambda m, g, x, w: m(g, x, w)
    if name == "RGCNConv":
        return gnn.RGCNConv(FEATURES, HIDDEN, ["cites", "writes"]), lambda m, g, x, other: m(g, x)
    if name == "GraphSageConv":   # its check for a single tensor knows no PIR value: the pair it would make
        return conv[name](), lambda m, g, x, _: m(g, (x, x))
    if name == "SAGPool":   # pooled features (its other outputs: the kept nodes' graph ids and their graph)
        return conv[name](), lambda m, g, x, _: m(g, x)[0]
    return conv[name](), lambda m, g, x, _: m(g, x)


def paddle3_compatible() -> None:
    """PGL (2023) under Paddle 3.3.1. PGL tells a tensor graph from a numpy one by isinstance(x, (paddle.Tensor,
    Variable)), which PIR values under to_static are not: count them in, or the graph converts its edges with numpy.
    With FLAGS_enable_pir_api=0 (legacy programs), 3.3.1's paddle.sum, exp, matmul, ... have no legacy static path
    of their own: tools/paddle_legacy_shim.py gives them one."""
    import os

    import paddle
    import pgl.utils.helper as helper
    helper.Variable = (paddle.static.Variable, paddle.pir.Value)
    if os.environ.get("FLAGS_enable_pir_api") == "0":
        from paddle_legacy_shim import install
        install()


def _deploy_one(out_dir: Path, model_name: str) -> str:
    """PGL's deployable model (examples/gnn_depoly/models: graph ops on plain tensors, no pgl.Graph) at its smallest,
    traced with the input specs of its export_model.py (every dim free) and saved by paddle.jit.save."""
    import paddle
    from paddle.static import InputSpec
    paddle3_compatible()
    sys.path.insert(0, "examples/gnn_depoly")
    import models
    paddle.seed(0)
    sizes = {"GCN": {"num_layers": 1}, "GAT": {"num_layers": 2, "num_heads": 2}, "GraphSage": {"num_layers": 2}}
    model = getattr(models, model_name)(input_size=FEATURES, num_class=3, hidden_size=HIDDEN, **sizes[model_name])
    model.eval()
    specs = [InputSpec([None, None], "int64", "edge_index"), InputSpec([None], "int64", "num_nodes"),
             InputSpec([None, None], "float32", "feature")]
    specs = [specs[0], specs[2]] if model_name == "GraphSage" else specs
    paddle.jit.save(paddle.jit.to_static(model, input_spec=specs), str(out_dir / f"Deploy_{model_name}" / "inference"))
    return "OK"


def _sampled_one(out_dir: Path) -> str:
    """PGL's deployable GAT on the subgraph its sampling example's get_sample_graph_list draws around SEEDS (sample
    size EDGES: every in-neighbour, so Paddle and gradc draw the same; Paddle 3.3.1's CPU kernel aborts on the -1 it
    documents for that), from the CSC index pgl.Graph builds of `edges`."""
    import paddle
    import pgl
    from paddle.static import InputSpec
    paddle3_compatible()
    sys.path[:0] = ["examples/gnn_depoly/node_classification_with_sampling", "examples/gnn_depoly"]
    import models
    from train import get_sample_graph_list
    paddle.seed(0)

    class Sampled(paddle.nn.Layer):
        """The GAT's outputs for the seed nodes."""

        def __init__(self):
            super().__init__()
            self.gat = models.GAT(input_size=FEATURES, num_class=3, hidden_size=HIDDEN, num_layers=2, num_heads=2)

        def forward(self, edges, feature):
            index = pgl.Graph(edges=edges, num_nodes=NODES).adj_dst_index
            seeds = paddle.arange(SEEDS, dtype="int64")
            edge_index, n_id = get_sample_graph_list(index._sorted_v, index._indptr, seeds, [EDGES])
            return self.gat(edge_index, paddle.shape(n_id)[0:1], paddle.gather(feature, n_id))[:SEEDS]

    model = Sampled()
    model.eval()
    specs = [InputSpec([EDGES, 2], "int64", "edges"), InputSpec([NODES, FEATURES], "float32", "feature")]
    paddle.jit.save(paddle.jit.to_static(model, input_spec=specs), str(out_dir / "Sampled_GAT" / "inference"))
    return "OK"


def export_one(out_dir: Path, entry: str) -> str:
    """The wrapped layer of ``entry``, traced with paddle.jit.to_static and saved by paddle.jit.save."""
    if entry.startswith("Deploy@"):
        return _deploy_one(out_dir, entry.partition("@")[2])
    if entry == "Sampled@GAT":
        return _sampled_one(out_dir)
    import paddle
    import pgl
    import pgl.nn as gnn
    from paddle.static import InputSpec
    paddle3_compatible()
    name, _, variant = entry.partition("@")
    paddle.seed(0)
    layer, call = _layer(name, variant)
    pooled = name in (*READOUTS, "SAGPool", "GraphMultisetTransformer")

    class Wrapped(paddle.nn.Layer):
        """The layer on the graph its inputs make."""

        def __init__(self):
            super().__init__()
            self.layer = layer
            # a readout reads no edges (Paddle's save refuses an unused input): a GCN layer before it, as PGL's
            # graph classification examples have
            self.conv = gnn.GCNConv(FEATURES, FEATURES) if name in READOUTS else None
            # a propagation without parameters (APPNP, LightGCN) follows a linear layer, as in PGL's examples
            self.linear = paddle.nn.Linear(FEATURES, FEATURES) if name in PROPAGATIONS else None

        def forward(self, edges, feature, extra=None):
            info = {}
            if pooled:
                index = paddle.to_tensor(GRAPH_NODE_INDEX, dtype="int32")
                info = {"_num_graph": paddle.to_tensor([2], dtype="int32"), "_graph_node_index": index,
                        "_graph_edge_index": paddle.to_tensor([0, EDGES // 2, EDGES], dtype="int32")}
            graph = pgl.Graph(edges=edges, num_nodes=NODES, **info)
            if name == "RGCNConv":
                graph = {"cites": graph, "writes": pgl.Graph(edges=extra, num_nodes=NODES)}
            if self.conv is not None:
                feature = self.conv(graph, feature)
            if self.linear is not None:
                feature = self.linear(feature)
            return call(self.layer, graph, feature, extra)

    specs = [InputSpec([EDGES, 2], "int64", "edges"), InputSpec([NODES, FEATURES], "float32", "feature")]
    if name == "PinSageConv":
        specs.append(InputSpec([EDGES, 1], "float32", "edge_weight"))
    if name == "RGCNConv":
        specs.append(InputSpec([EDGES, 2], "int64", "edges_writes"))
    model = Wrapped()
    model.eval()
    paddle.jit.save(paddle.jit.to_static(model, input_spec=specs, full_graph=True),
                    str(out_dir / entry.replace("@", "_") / "inference"))
    return "OK"


if __name__ == "__main__":
    main(__file__, export_one, SMALLEST, timeout=600)
