"""The PIR half of tools/paddle_user_week30.py (run it after that one, into the same directory): the trained U-Net in
dygraph, saved by paddle.jit.save (unet_pir.json gzipped), and the trained DeepLab head built in PIR static mode and
saved by paddle.static.save_inference_model (deeplab_pir.json gzipped), both in eval mode with the weights of
NAME_final.npz; Paddle Inference's outputs of the test images, with oneDNN (its CPU default) and without
(predictor_pir.npz, the first two test images), and the eval-mode U-Net's F.cross_entropy(axis=1,
ignore_index=255) of the test set with its head's weight gradient (unet_ce, unet_ce_head_grad);
meta.json's pir.layers names each model's parameters in the saved files by layer. And both models trained in PIR
static mode (NAME_pir_train.json, NAME_pir_startup.json; Paddle's losses and weights' sums, meta.json's pir.train)..

    FLAGS_enable_pir_api=1 /work/paddle-venv/bin/python tools/paddle_user_week30_pir.py tests/data/paddle/user_week30
"""

import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle_programs import write_gz, write_pir_gz
from paddle_user_week30 import BATCH, IGNORE, SIZE, STEPS, TRAIN, DeepLab, UNet, adamw, losses, momentum


def with_weights(model, values, layers: dict) -> None:
    """The trained values, each by its layer's key (the legacy program's var names, ``layers``, are other ones)."""
    model.set_state_dict({key: values[layers[key]] for key in model.state_dict()})
    model.eval()


def predictions(model_file: str, params_file: str, x: np.ndarray, failures: dict) -> dict:
    """The Predictor's output with oneDNN and without; a run that fails is recorded in ``failures`` instead."""
    outputs = {}
    for onednn in (True, False):
        key = "onednn" if onednn else "plain"
        config = paddle.inference.Config(model_file, params_file)
        if not onednn:
            config.disable_mkldnn()
        predictor = paddle.inference.create_predictor(config)
        predictor.get_input_handle(predictor.get_input_names()[0]).copy_from_cpu(x)
        try:
            predictor.run()
        except (NotImplementedError, RuntimeError) as error:
            failures[f"{Path(model_file).stem}_{key}"] = str(error).splitlines()[0]
            continue
        outputs[key] = predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()
    return outputs


def pir_training(out: Path) -> dict:
    """Both models trained in PIR static mode by Paddle's minimize, as in the legacy script (paddle.seed(30) before
    each, the same batches): NAME_pir_train.json and NAME_pir_startup.json gzipped, the loss fetched as "loss";
    Paddle's losses and each trained parameter's and statistic's sum of |value|."""
    found = {}
    data = np.load(out / "data.npz")
    for name, model_class, make_optimizer in (("unet", UNet, momentum), ("deeplab", DeepLab, adamw)):
        paddle.seed(30)
        main_prog, startup = paddle.static.Program(), paddle.static.Program()
        with paddle.static.program_guard(main_prog, startup):
            x = paddle.static.data("x", [-1, 3, SIZE, SIZE], "float32")
            label = paddle.static.data("label", [-1, 1, SIZE, SIZE], "int64")
            model = model_class()
            loss = losses(model(x), label)[2]
            optimizer, schedule = make_optimizer()
            optimizer.minimize(loss)
            paddle._pir_ops.fetch(loss, "loss", 0).persistable = True
        for kind, program in (("train", main_prog), ("startup", startup)):
            write_pir_gz(program, out / f"{name}_pir_{kind}.json")
        exe, scope, steps = paddle.static.Executor(paddle.CPUPlace()), paddle.static.Scope(), []
        with paddle.static.scope_guard(scope):
            exe.run(startup)
            for step in range(STEPS):
                batch = slice(step * BATCH % TRAIN, step * BATCH % TRAIN + BATCH)
                steps.append(float(exe.run(main_prog, feed={"x": data["x"][batch], "label": data["label"][batch]},
                                           fetch_list=[])[0]))
                schedule.step()
            final = {param.name: float(np.abs(np.array(scope.var(param.name).get_tensor())).sum())
                     for param in model.state_dict().values()}
        found[name] = {"losses": steps, "final": final}
    return found


def main(out: Path) -> None:
    meta, failures = json.loads((out / "meta.json").read_text()), {}
    unet = UNet()
    with_weights(unet, np.load(out / "unet_final.npz"), meta["unet"]["names"]["layers"])
    x = np.load(out / "test.npz")["x"][:2]
    spec = [paddle.static.InputSpec([-1, 3, SIZE, SIZE], "float32", "x")]
    test = np.load(out / "test.npz")
    loss = F.cross_entropy(unet(paddle.to_tensor(test["x"])), paddle.to_tensor(test["label"]), axis=1,
                           ignore_index=IGNORE)
    loss.backward()   # the fine-tuning loss of the eval-mode export, as gradc compile --add-loss adds it
    outputs = {"unet_ce": loss.numpy(), "unet_ce_head_grad": unet.head.weight.grad.numpy()}
    with tempfile.TemporaryDirectory() as saved:
        paddle.jit.save(unet, f"{saved}/unet", input_spec=spec)
        write_gz(out / "unet_pir.json", Path(f"{saved}/unet.json").read_bytes())
        for key, value in predictions(f"{saved}/unet.json", f"{saved}/unet.pdiparams", x, failures).items():
            outputs[f"unet_{key}"] = value
        paddle.enable_static()
        main_prog, startup = paddle.static.Program(), paddle.static.Program()
        with paddle.static.program_guard(main_prog, startup):
            image = paddle.static.data("x", [-1, 3, SIZE, SIZE], "float32")
            deeplab = DeepLab()
            deeplab.eval()
            logits = deeplab(image)
        exe = paddle.static.Executor(paddle.CPUPlace())
        exe.run(startup)
        final = np.load(out / "deeplab_final.npz")
        for key, param in deeplab.state_dict().items():
            value = final[meta["deeplab"]["names"]["layers"][key]]
            paddle.static.global_scope().var(param.name).get_tensor().set(value, paddle.CPUPlace())
        paddle.static.save_inference_model(f"{saved}/deeplab", [image], [logits], exe, program=main_prog)
        write_gz(out / "deeplab_pir.json", Path(f"{saved}/deeplab.json").read_bytes())
        for key, value in predictions(f"{saved}/deeplab.json", f"{saved}/deeplab.pdiparams", x, failures).items():
            outputs[f"deeplab_{key}"] = value
    with paddle.utils.unique_name.guard():   # named afresh, as in the legacy script
        trained = pir_training(out)
    np.savez_compressed(out / "predictor_pir.npz", **outputs)
    meta["pir"] = {"outputs": sorted(outputs), "predictor_failures": failures, "train": trained,
                   "layers": {name: {key: param.name for key, param in model.state_dict().items()}
                              for name, model in (("unet", unet), ("deeplab", deeplab))}}
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
