"""Export PaddleHelix's own models (pahelix.model_zoo's GEM / GeoGNN, LiteGEM, PretrainGNN and its attribute-masking
and supervised heads, the protein sequence encoders; GraphDTA's drug-target models from apps/) as Paddle 3 saves them
(inference.json + inference.pdiparams, PIR), with their initial weights (seed 0), for tools/real_models.py to check
gradc against Paddle on. Needs paddlepaddle 3.3.1, a PaddleHelix checkout, PGL (see tools/pgl_export.py) and RDKit
(pahelix's compound vocabularies) on PYTHONPATH:

    /path/to/paddle/python tools/paddlehelix_export.py PADDLEHELIX_DIR OUT_DIR GeoGNN Protein@lstm ...

Each model is built from its own config (the app's JSON, or the one its app documents) with its layers cut to two,
on a molecule batch of two graphs (atoms 0-9 and 10-23, 48 bonds, 96 bond angles; each atom and bond feature an
int64 input named as PaddleHelix names it) or a protein of 32 tokens, wrapped in a paddle.nn.Layer that makes the
pgl.Graph its forward reads, and saved in eval mode by paddle.jit.save, in a process of its own, into
OUT_DIR/<entry>/. One line per entry: OK, or FAIL and why (with FLAGS_enable_pir_api=0, as legacy programs).
OUT_DIR/feeds.json gives each integer input its bound (a feature's vocabulary, an edge end's node count): check them
with UNIFORM=1 FEEDS="$(cat OUT_DIR/feeds.json)".
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pgl_export import paddle3_compatible
from suite_export import main

ATOMS, BONDS, ANGLES, TOKENS = 24, 48, 96, 32
GRAPH_NODE_INDEX = [0, 10, ATOMS]   # two molecules

SMALLEST = ["GeoGNN", "GeoGNN@pretrain", "LiteGEM", "PretrainGNN", "PretrainGNN@attrmask", "PretrainGNN@supervised",
            "Protein@lstm", "Protein@resnet", "Protein@transformer", "GraphDTA@gin", "GraphDTA@gat", "GraphDTA@gcn",
            "GraphDTA@gat_gcn", "MolTrans"]

GEM_CONFIG = "apps/pretrained_compound/ChemRL/GEM/model_configs/geognn_l8.json"
PRETRAIN_GNN_CONFIG = "apps/pretrained_compound/pretrain_gnns/model_configs/pregnn_paper.json"
GRAPH_DTA_CONFIG = "apps/drug_target_interaction/graph_dta/model_configs/{}_config.json"
GEM_PRETRAIN = {"hidden_size": 16, "act": "leaky_relu", "pretrain_tasks": ["Cm", "Fg", "Bar", "Blr", "Adc"],
                "Cm_vocab": 20, "Adc_vocab": 30, "Fg_size": 6, "dropout_rate": 0.2}   # pretrain_gem.json's, cut
LITE_GEM_CONFIG = {   # competition/kddcup2021-PCQM4M-LSC/src/config.yaml's, its sizes cut; its feature names GEM's
    "aggr": "softmax", "learn_t": False, "init_t": 1.0, "learn_p": False, "init_p": 1.0, "mlp_layers": 1,
    "norm": "batch", "concat": True, "num_layers": 2, "dropout_rate": 0.2, "virtual_node": True, "emb_dim": 16,
    "num_tasks": 1, "graphnorm": False, "clf_layers": 2, "appnp_k": None, "appnp_a": 0.8, "block_num": 1,
    "layer_type": "LiteGEMConv", "atom_names": ["atomic_num", "degree"], "bond_names": ["bond_dir", "bond_type"],
    "atom_float_names": ["van_der_waals_radis", "partial_charge", "mass"]}


def _gem_pretrain_inputs() -> list:
    """The feed dict of GEM's five pretraining tasks (apps/pretrained_compound/ChemRL/GEM's, its sizes cut): context
    ids of masked atoms, functional group labels, atoms of bond angles and bond lengths and their values, atom pairs
    and their distances."""
    from paddle.static import InputSpec
    pairs = [InputSpec([8], "int64", name) for name in ("Cm_node_i", "Ba_node_i", "Ba_node_j", "Ba_node_k",
                                                         "Bl_node_i", "Bl_node_j", "Ad_node_i", "Ad_node_j")]
    return [*pairs, InputSpec([8, 1], "int64", "Cm_context_id"),
            *[InputSpec([2, 2], "float32", f"Fg_{kind}") for kind in ("morgan", "daylight", "maccs")],
            InputSpec([8, 1], "float32", "Ba_bond_angle"), InputSpec([8, 1], "float32", "Bl_bond_length"),
            InputSpec([8, 1], "float32", "Ad_atom_dist")]


def _bounds(config: dict) -> dict:
    """The integer inputs' bounds: each feature's vocabulary, each edge end's node count."""
    from pahelix.utils.compound_tools import CompoundKit
    from pahelix.utils.protein_tools import ProteinTokenizer
    bounds = {name: CompoundKit.get_atom_feature_size(name) for name in config.get("atom_names", ())}
    bounds.update({name: CompoundKit.get_bond_feature_size(name) for name in config.get("bond_names", ())})
    return {**bounds, "edges": ATOMS, "angle_edges": BONDS, "masked_node_indice": ATOMS,
            "masked_node_labels": CompoundKit.get_atom_feature_size("atomic_num") + 3,
            "tokens": len(ProteinTokenizer.vocab), "pos": TOKENS, "Cm_context_id": GEM_PRETRAIN["Cm_vocab"] + 3,
            **{spec.name: ATOMS for spec in _gem_pretrain_inputs() if spec.name.endswith(("_i", "_j", "_k"))}}


def _molecule_model(name: str, variant: str):
    """PaddleHelix's molecule model ``name``, its config, and how it is called on the graphs."""
    from pahelix.model_zoo import pretrain_gnns_model
    from pahelix.model_zoo.gem_model import GeoGNNModel
    if name == "GeoGNN":
        config = {**json.loads(Path(GEM_CONFIG).read_text()), "layer_num": 2}
        if variant != "pretrain":
            return GeoGNNModel(config), config, lambda m, graphs, extra: m(*graphs)
        from pahelix.model_zoo.gem_model import GeoPredModel
        config.update(GEM_PRETRAIN)
        names = [spec.name for spec in _gem_pretrain_inputs()]
        # the masked graphs are the graphs themselves (masking only changes their atom features)
        return GeoPredModel(config, GeoGNNModel(config)), config, lambda m, graphs, extra: m(
            {"atom_bond_graph": graphs[0], "bond_angle_graph": graphs[1], "masked_atom_bond_graph": graphs[0],
             "masked_bond_angle_graph": graphs[1]}, dict(zip(names, extra)))
    if name == "LiteGEM":
        from pahelix.model_zoo.light_gem_model import LiteGEM
        return LiteGEM(LITE_GEM_CONFIG), LITE_GEM_CONFIG, lambda m, graphs, extra: m(graphs[0])
    if name == "GraphDTA":
        sys.path.insert(0, "apps/drug_target_interaction/graph_dta/src")
        from model import DTAModel
        config = json.loads(Path(GRAPH_DTA_CONFIG.format(variant)).read_text())
        config["compound"].update(layer_num=2, gat_nheads=2)
        return DTAModel(config), config["compound"], lambda m, graphs, extra: m(graphs[0], *extra)
    config = {**json.loads(Path(PRETRAIN_GNN_CONFIG).read_text()), "layer_num": 2, "embed_dim": 32, "task_num": 3}
    encoder = pretrain_gnns_model.PretrainGNNModel(config)
    if variant == "attrmask":
        return pretrain_gnns_model.AttrmaskModel(config, encoder), config, lambda m, graphs, extra: m(graphs[0], *extra)
    if variant == "supervised":
        return pretrain_gnns_model.SupervisedModel(config, encoder), config, \
            lambda m, graphs, extra: m(graphs[0], *extra)
    return encoder, config, lambda m, graphs, extra: m(graphs[0])


def _molecule_specs(name: str, variant: str, config: dict) -> tuple[list, list]:
    """The inputs of a molecule model: node features, bond features and the bond-angle graph's (GeoGNN), and a
    head's or a drug-target model's own (extra)."""
    from paddle.static import InputSpec
    column = [1] if name == "GraphDTA" else []   # GraphDTA's atom features are columns, which it squeezes
    nodes = [InputSpec([ATOMS, *column], "int64", n) for n in config["atom_names"]]
    nodes += [InputSpec([ATOMS], "float32", n) for n in config.get("atom_float_names", ())]
    if name == "GraphDTA":
        nodes.append(InputSpec([ATOMS, 28], "float32", "atom_numeric_feat"))
    # GraphDTA's convolutions read no bond features (Paddle's save refuses an unused input)
    edges = [InputSpec([BONDS], "int64", n) for n in config["bond_names"] if name != "GraphDTA"]
    edges += [InputSpec([BONDS], "float32", n) for n in config.get("bond_float_names", ())]
    angles = [InputSpec([ANGLES, 2], "int64", "angle_edges"), InputSpec([ANGLES], "float32", "bond_angle")]
    extra = {"pretrain": _gem_pretrain_inputs(), "attrmask": [InputSpec([6], "int64", "masked_node_indice"),
                          InputSpec([6, 1], "int64", "masked_node_labels")],
             "supervised": [InputSpec([2, 3], "float32", "labels"), InputSpec([2, 3], "float32", "valids")]}
    if name == "GraphDTA":   # a protein per molecule
        extra[variant] = [InputSpec([2, TOKENS], "int64", "tokens"), InputSpec([2, TOKENS], "float32", "mask")]
    graph = [InputSpec([BONDS, 2], "int64", "edges"), *nodes, *edges, *(angles if name == "GeoGNN" else [])]
    return graph, extra.get(variant, [])


def _molecule_wrapper(name: str, variant: str):
    """The model wrapped to take its graphs' tensors, and the InputSpecs of those."""
    import paddle
    import pgl
    model, config, call = _molecule_model(name, variant)
    graph_specs, extra_specs = _molecule_specs(name, variant, config)
    node_names = [s.name for s in graph_specs[1:] if s.shape[0] == ATOMS]
    edge_names = [s.name for s in graph_specs[1:] if s.shape[0] == BONDS]

    class Molecules(paddle.nn.Layer):
        """The model on the molecule batch its inputs make."""

        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, inputs):   # a list: to_static takes no *args
            named = dict(zip([s.name for s in graph_specs + extra_specs], inputs))
            info = {"_num_graph": paddle.to_tensor([2], dtype="int32"),
                    "_graph_node_index": paddle.to_tensor(GRAPH_NODE_INDEX, dtype="int32"),
                    "_graph_edge_index": paddle.to_tensor([0, BONDS // 2, BONDS], dtype="int32")}
            graphs = [pgl.Graph(edges=named["edges"], num_nodes=ATOMS, node_feat={n: named[n] for n in node_names},
                                edge_feat={n: named[n] for n in edge_names}, **info)]
            if name == "GeoGNN":   # its bond-angle graph: the bonds are its nodes
                graphs.append(pgl.Graph(edges=named["angle_edges"], num_nodes=BONDS,
                                        edge_feat={"bond_angle": named["bond_angle"]}))
            return call(self.model, graphs, inputs[len(graph_specs):])

    return Molecules(), graph_specs + extra_specs, config


def _protein_wrapper(variant: str):
    """ProteinModel's pretraining task on ProteinEncoderModel's ``variant`` encoder (two layers, 32 wide)."""
    import paddle
    from paddle.static import InputSpec
    from pahelix.model_zoo.protein_sequence_model import ProteinEncoderModel, ProteinModel
    config = {"model_type": variant, "emb_dim": 32, "hidden_size": 32, "n_layers": 2, "n_heads": 2, "kernel_size": 3}
    model = ProteinModel(ProteinEncoderModel(config), config)
    tokens = InputSpec([1, TOKENS], "int64", "tokens")
    if variant != "lstm":
        return model, [tokens, InputSpec([1, TOKENS], "int64", "pos")], {}

    class TokensOnly(paddle.nn.Layer):
        """The LSTM encoder reads no positions (Paddle's save refuses an unused input)."""

        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, tokens):
            return self.model(tokens, None)

    return TokensOnly(), [tokens], {}


def _moltrans_wrapper():
    """MolTrans's double towers (apps/drug_target_interaction/moltrans_dti) with its config.json's sizes cut: a drug
    of 8 substructures, a target of 16."""
    from paddle.static import InputSpec
    sys.path.insert(0, "apps/drug_target_interaction/moltrans_dti")
    from double_towers import MolTransModel
    drug, target = 8, 16
    config = {**json.loads(Path("apps/drug_target_interaction/moltrans_dti/config.json").read_text()),
              "drug_max_seq": drug, "target_max_seq": target, "emb_size": 16, "input_drug_dim": 100,
              "input_target_dim": 100, "interm_size": 32, "num_attention_heads": 2, "flatten_dim": 3 * drug * target,
              "layer_size": 1}
    specs = [InputSpec([1, drug], "int64", "drug"), InputSpec([1, target], "int64", "target"),
             InputSpec([1, drug], "float32", "drug_mask"), InputSpec([1, target], "float32", "target_mask")]
    return MolTransModel(config), specs, {}


def export_one(out_dir: Path, entry: str) -> str:
    """PaddleHelix's model of ``entry``, traced with paddle.jit.to_static and saved by paddle.jit.save."""
    import paddle
    paddle3_compatible()
    name, _, variant = entry.partition("@")
    paddle.seed(0)
    if name == "MolTrans":
        model, specs, config = _moltrans_wrapper()
    else:
        model, specs, config = _protein_wrapper(variant) if name == "Protein" else _molecule_wrapper(name, variant)
    model.eval()
    nested = specs if name in ("Protein", "MolTrans") else [specs]
    paddle.jit.save(paddle.jit.to_static(model, input_spec=nested, full_graph=True),
                    str(out_dir / entry.replace("@", "_") / "inference"))
    feeds = out_dir / "feeds.json"
    known = json.loads(feeds.read_text()) if feeds.exists() else {}
    known.update({n: {"bound": b} for n, b in _bounds(config).items() if n in {s.name for s in specs}})
    feeds.write_text(json.dumps(known, sort_keys=True))
    return "OK"


if __name__ == "__main__":
    main(__file__, export_one, SMALLEST, timeout=600)
