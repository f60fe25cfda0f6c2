"""Export Paddle3D's own architectures as Paddle 3 saves them (PIR .json + .pdiparams), with their initial weights
(seed 0), for tools/real_models.py to check gradc against Paddle on. Needs paddlepaddle 3.3.1 and a Paddle3D checkout
(its paddle3d/ and configs/) with the packages `import paddle3d.apis` needs (PyYAML, opencv, numba, pyquaternion,
nuscenes-devkit, albumentations 1.3, paddleseg, visualdl, einops, h5py, ...):

    /path/to/paddle/python tools/paddle3d_export.py PADDLE3D_DIR OUT_DIR [CONFIG[,KEY=VALUE...] ...]

Each config is built by Paddle3D's own Config (every `pretrained` entry of its model None, every pretrained-weights
download an empty parameter file: initial weights) and saved by its own export (tools/export.py: model.eval(), then
model.export(save_dir, **kwargs), to_static on the model's export_forward and input_spec) in a process of its own,
on the CPU, into OUT_DIR/<config name>/. KEY=VALUE pairs are the export's keyword arguments (its tools/export.py
--KEY VALUE), values as Python literals, but model.KEY=VALUE sets an entry of the model's config, and
bev=(C, STAGE, ...) exports instead the model's named stages (backbone, neck, head) on a [1, C, -1, -1]
pseudo-image: the differentiable part of a model whose voxelization and post-processing need Paddle3D's compiled
CUDA extensions. Without configs, SMALLEST is exported: the smallest config of each family. One line per config: OK,
or FAIL and why.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import suite_export

# The smallest config of each family (most families have one).
SMALLEST = [
    "configs/smoke/smoke_dla34_no_dcn_kitti.yml",
    "configs/smoke/smoke_hrnet18_no_dcn_kitti.yml",
    "configs/caddn/caddn_ocrnet_hrnet_w18_kitti.yml",
    "configs/petr/petr_vovnet_gridmask_p4_800x320.yml",
    "configs/petr/petrv2_vovnet_gridmask_p4_800x320.yml",
    "configs/cape/capet_r50_704x256_24ep_wocbgs_imagenet_pretrain.yml",
    "configs/bevformer/bevformer_tiny_r50_fpn_nuscenes.yml",
    "configs/bevdet/bevdet4d_r50_depth_nuscenes.yml",
    "configs/rtebev/rtebev_r50_nuscenes_256x704_msdepth_hybird_cbgs.yml",
    "configs/bevfusion/bevf_pp_2x8_1x_nusc.yaml",
    "configs/bev_lanedet/bev_lanedet_apollo_576x1024.yml,model.pretrained_model_path=None",   # a local file
    "configs/dd3d/dd3d_dla_34_kitti.yml",
    "configs/centerpoint/centerpoint_pillars_016voxel_kitti.yml",
    "configs/centerpoint/centerpoint_pillars_016voxel_kitti.yml,bev=(64,'backbone','neck','bbox_head')",
    "configs/pointpillars/pointpillars_xyres16_kitti_car.yml",
    "configs/pointpillars/pointpillars_xyres16_kitti_car.yml,bev=(64,'backbone','neck','head')",
    "configs/iassd/iassd_kitti.yaml",
    "configs/pv_rcnn/pv_rcnn_005voxel_kitti.yml",
    "configs/voxel_rcnn/voxel_rcnn_005voxel_kitti_car.yml",
    "configs/squeezesegv3/squeezesegv3_rangenet21_semantickitti.yml,input_shape=[64,256]",
    "configs/paconv/paconv_modelnet40.yml",
]


def _no_pretrained(node: object) -> None:
    """Every `pretrained` entry of a model config None: no download, initial weights."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "pretrained":
                node[key] = None
            else:
                _no_pretrained(value)
    elif isinstance(node, list):
        for value in node:
            _no_pretrained(value)


def _without_compiled_ops() -> None:
    """Paddle3D's compiled CUDA extensions (paddle3d.ops.*, built on first use) as modules that import but cannot
    run: the models whose extensions serve only pre- and post-processing build without them."""
    import types

    from paddle3d import ops
    for name in ops.custom_ops:
        sys.modules[f"paddle3d.ops.{name}"] = types.ModuleType(f"paddle3d.ops.{name}")


def _export_bev_network(model, stages: list[str], channels: int, path: str) -> None:
    """The model's differentiable part after its voxelization and pillar scatter, which need compiled extensions:
    its stages (backbone, neck, head) on a pseudo-image [1, channels, -1, -1], their tensors as outputs."""
    import paddle

    def tensors(value) -> list:
        if isinstance(value, dict):
            return [t for key in sorted(value) for t in tensors(value[key])]
        if isinstance(value, (list, tuple)):
            return [t for item in value for t in tensors(item)]
        return [value] if hasattr(value, "dtype") else []   # a Tensor, or under to_static a pir.Value

    class BevNetwork(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.stages = paddle.nn.LayerList([getattr(model, name) for name in stages])

        def forward(self, pseudo_image):
            value = pseudo_image
            for stage in self.stages:
                value = stage(value)
            return tensors(value)

    spec = [paddle.static.InputSpec([1, channels, -1, -1], "float32", "pseudo_image")]
    paddle.jit.save(paddle.jit.to_static(BevNetwork(), input_spec=spec), path)


def export_one(out_dir: Path, entry: str) -> str:
    """Paddle3D's export of one config, as its tools/export.py runs it, but for the weights it loads (none)."""
    sys.path.remove(str(Path(__file__).parent))   # tools/coverage would shadow the package numba imports
    import paddle
    import paddle.utils.download
    from paddle3d.apis.config import Config
    path, *options = re.split(r",(?![^\[(]*[\])])", entry)   # commas inside brackets belong to a value
    kwargs = {key: ast.literal_eval(value) for key, value in (o.split("=", 1) for o in options)}
    bev = kwargs.pop("bev", None)
    model_entries = {key[len("model."):]: kwargs.pop(key) for key in list(kwargs) if key.startswith("model.")}
    paddle.set_device("cpu")
    paddle.seed(0)
    empty = out_dir / "empty.pdparams"
    paddle.save({}, str(empty))
    paddle.utils.download.get_path_from_url = lambda *args, **kw: str(empty)   # backbones' own downloads
    if bev:
        _without_compiled_ops()
    cfg = Config(path=path)
    _no_pretrained(cfg.dic["model"])
    cfg.dic["model"].update(model_entries)
    model = cfg.model
    model.eval()
    if bev:
        _export_bev_network(model, bev[1:], bev[0], str(out_dir / Path(path).stem / "inference"))
        return "OK"
    model.export(str(out_dir / Path(path).stem), name="inference", **kwargs)
    return "OK"


def main() -> None:
    suite_export.main(__file__, export_one, SMALLEST)


if __name__ == "__main__":
    main()
