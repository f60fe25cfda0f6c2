"""Export PaddleScience's example models as Paddle 3 saves them (inference.json + inference.pdiparams, PIR), with
their initial weights, for tools/real_models.py to check gradc against Paddle on. Needs paddlepaddle 3.3.1 and a
PaddleScience checkout (its ppsci/ and examples/) with the packages `import ppsci` needs:

    /path/to/paddle/python tools/paddlescience_export.py PADDLESCIENCE_DIR OUT_DIR [EXAMPLE[,OVERRIDE...] ...]

Each example is run as its users run its export, `python examples/laplace/laplace2d.py mode=export`, in a process of
its own, with the example's folder as the working directory, its hydra config, and the overrides
INFER.pretrained_model_path=null (random initial weights, no download), INFER.export_path=OUT_DIR/<example>/inference
and hydra's output folder in a temporary one, plus the entry's own overrides (a smaller MODEL, or hydra's
--config-name=NAME for an example with several configs). Without examples, SMALLEST is exported: one example per
architecture of ppsci/arch that an example exports. One line per example: OK, or FAIL and why.
"""

from __future__ import annotations

import os
import runpy
import sys
import tempfile
from pathlib import Path

from suite_export import export_each, in_child

SMALLEST = [
    "laplace/laplace2d.py",                                      # MLP (the PINNs' network)
    "allen_cahn/allen_cahn_sota.py",                             # ModifiedMLP (periodic embedding, RWF)
    "allen_cahn/allen_cahn_piratenet.py",                        # PirateNet
    "bracket/bracket.py",                                        # ModelList of MLPs
    "operator_learning/deeponet.py",                             # DeepONet
    "heat_exchanger/heat_exchanger.py",                          # HEDeepONets
    "catheter/catheter.py",                                      # FNO1d
    "brusselator3d/brusselator3d.py",                            # LNO
    "neuraloperator/train_tfno.py",                              # TFNO2dNet
    "neuraloperator/train_uno.py,--config-name=uno_darcyflow_pretrain.yaml",   # UNONet
    "neuraloperator/train_sfno.py,--config-name=sfno_swe_pretrain.yaml",       # SFNONet (spherical harmonics)
    "deepcfd/deepcfd.py",                                        # UNetEx
    "phygeonet/heat_equation.py",                                # USCNN
    "adv/adv_cvit.py",                                           # CVit1D
    "ns/ns_cvit.py",                                             # CVit
    "spinn/helmholtz3d.py",                                      # SPINN
    "lorenz/train_transformer.py",                               # PhysformerGPT2 over LorenzEmbedding
    "transformer4sr/transformer4sr.py",                          # Transformer (symbolic regression)
    "earthformer/earthformer_enso_train.py",                     # CuboidTransformer
    "nowcastnet/nowcastnet.py",                                  # NowcastNet
    "tempoGAN/tempoGAN.py",                                      # tempoGAN's Generator
]


def export_one(out: Path, example: str, overrides: list[str]) -> str:
    """The example's own export (its `mode=export` path), from its folder."""
    script = Path("examples") / example
    os.chdir(script.parent)
    sys.path.insert(0, str(Path.cwd()))
    sys.argv = [script.name, "mode=export", "INFER.pretrained_model_path=null",
                f"INFER.export_path={out / 'inference'}", f"hydra.run.dir={tempfile.mkdtemp(prefix='ppsci-')}",
                *overrides]
    try:
        runpy.run_path(script.name, run_name="__main__")
    except SystemExit as stop:   # hydra exits 0 after a run that went well
        if stop.code not in (None, 0):
            raise
    return "OK" if (out / "inference.json").exists() else "no inference.json written"


def main() -> None:
    source, out_dir, entries = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve(), sys.argv[3:] or SMALLEST
    if in_child(source):   # one example
        example, *overrides = entries[0].split(",")
        config = next((o.split("=", 1)[1] for o in overrides if o.startswith("--config-name=")), "")
        name = Path(example).stem + (f"__{Path(config).stem}" if config else "")
        print(export_one(out_dir / name, example, overrides), flush=True)
        return
    export_each(__file__, source, out_dir, entries, timeout=900)

if __name__ == "__main__":
    main()
