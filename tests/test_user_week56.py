"""A federated-learning and privacy engineer's week (docs/tools.md): federated averaging of an MLP, a small CNN and a
FedProx MLP (its proximal term mu/2 * ||w - w_global||^2 against the global weights fed beside each client's shard)
over 3 non-IID clients and 2 rounds, each client `gradc train`ed from the global weights' file and the server
averaging the clients' saved files by shard size, against Paddle 3.3.1's (tools/paddle_user_week56.py); DP-SGD's
per-example gradients from `gradc run --per-example`, clipped, noised and applied in numpy, against Paddle's computed
example by example; checked against central differences and evaluated. Each fault found, as the behaviour it has
now."""

import json

import numpy as np
import pytest

from cli_inprocess import gradc_cli
from fixtures import DATA, step_losses, unpacked

WEEK = DATA / "user_week56"
META = json.loads((WEEK / "meta.json").read_text())
MODELS = ("mlp", "cnn", "fedprox")
SHARDS, LOCAL, BATCH = (12, 16, 20), 3, 4
CLIP, LR = 1.0, 0.1


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The week's files unpacked; each model's clients' shards as the .npz files a client holds, each model compiled
    with SGD(0.1)."""
    out = unpacked(WEEK, tmp_path_factory.mktemp("week56"), (*MODELS, "dpsgd"))
    for model in MODELS:
        shards = np.load(out / model / "shards.npz")
        for client in range(len(SHARDS)):
            prefix = f"client_{client}/"
            np.savez(out / model / f"client_{client}.npz",
                     **{key[len(prefix):]: shards[key] for key in shards.files if key.startswith(prefix)})
        compiled = gradc_cli("compile", out / model / "forward.pb", "-o", out / model / "t.pb", "--optimizer", "sgd",
                             "--lr", LR)
        assert compiled.returncode == 0, compiled.stderr
    return out


def _globals_feed(path, weights: dict) -> None:
    """FedProx's w_global: each parameter's global value under its input's name."""
    np.savez(path, **{"global_" + name: value for name, value in weights.items()})


def _round(folder, model: str, global_weights: dict, round_: int) -> tuple[list, dict]:
    """One round: each client trained from the global weights' file on its shard, the server's weighted average."""
    np.savez(folder / f"global_{round_}.npz", **global_weights)
    losses, clients = [], []
    for client in range(len(SHARDS)):
        saved = folder / f"r{round_}_client_{client}.npz"
        extra = ()
        if model == "fedprox":
            _globals_feed(folder / f"w_global_{round_}.npz", global_weights)
            extra = ("--feed", folder / f"w_global_{round_}.npz")
        run = gradc_cli("train", folder / "t.pb", "--startup", folder / "t.startup.pb", "--params",
                        folder / f"global_{round_}.npz", "--data", folder / f"client_{client}.npz", "--batch-size",
                        BATCH, "--steps", LOCAL, "--save-params", saved, "--json", "--log-every", 1, *extra)
        losses.append(step_losses(run))
        clients.append(dict(np.load(saved)))
    average = {name: sum(weights[name] * size for weights, size in zip(clients, SHARDS)) / sum(SHARDS)
               for name in clients[0]}
    return losses, average


@pytest.mark.parametrize("model", MODELS)
def test_federated_averaging_gives_paddles_rounds(files, model):
    """Two rounds of 3 clients, each 3 local SGD steps from the global weights' file, averaged by shard size: each
    client's losses are Paddle's to 1e-6 and each round's global weights to 2e-7 (the CNN's first loss 3.6549, the
    FedProx clients' proximal term against the fed w_global)."""
    folder, rounds = files / model, np.load(files / model / "rounds.npz")
    global_weights = {name: value for name, value in np.load(folder / "init.npz").items()
                      if name in META[model]["params"]}
    for round_ in range(2):
        losses, global_weights = _round(folder, model, global_weights, round_)
        np.testing.assert_allclose(losses, META[model]["losses"][round_], rtol=1e-6)
        for name, value in global_weights.items():
            np.testing.assert_allclose(value, rounds[f"round_{round_}/{name}"], rtol=0, atol=2e-7, err_msg=name)


@pytest.mark.parametrize("model", MODELS)
def test_the_final_global_model_gives_paddles_logits(files, model):
    """The last round's global weights run on every client's examples to Paddle's logits."""
    folder, rounds = files / model, np.load(files / model / "rounds.npz")
    final = {key.split("/", 1)[1]: value for key, value in rounds.items() if key.startswith("round_1/")}
    np.savez(folder / "final.npz", **final)
    examples = [dict(np.load(folder / f"client_{client}.npz")) for client in range(len(SHARDS))]
    feed = {key: np.concatenate([shard[key] for shard in examples]) for key in examples[0]}
    if model == "fedprox":
        feed.update({"global_" + name: value for name, value in final.items()})
    np.savez(folder / "every.npz", **feed)
    run = gradc_cli("run", folder / "forward.pb", "--params", folder / "final.npz", "--feed", folder / "every.npz",
                    "--fetch", f"{META[model]['logits']}=logits", "-o", folder / "logits.npz")
    assert run.returncode == 0, run.stderr
    np.testing.assert_allclose(np.load(folder / "logits.npz")["logits"], np.load(folder / "outputs.npz")["logits"],
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("model", MODELS)
def test_check_agrees_with_central_differences(files, model):
    """gradc check of each forward program on client 0's shard (FedProx's w_global away from its weights, so that
    the proximal term's gradient is not zero)."""
    folder = files / model
    feed = dict(np.load(folder / "client_0.npz"))
    if model == "fedprox":
        feed.update({"global_" + name: value + 0.3 for name, value in np.load(folder / "init.npz").items()})
    np.savez(folder / "check_feed.npz", **feed)
    run = gradc_cli("check", folder / "forward.pb", "--feed", folder / "check_feed.npz", "--params",
                    folder / "init.npz", "--json")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["ok"]


def test_dp_sgd_per_example_gradients_are_paddles(files):
    """`gradc run --per-example` of the MLP compiled without an optimizer, its four gradients fetched by two globs:
    each example's gradient is Paddle's (computed one example a run) to 4e-7; clipped to norm 1 over all
    parameters, summed, noised, averaged and applied by SGD in numpy, the step is Paddle's; and the mean of the
    per-example gradients is the batch's gradient (the loss is a mean)."""
    folder = files / "dpsgd"
    assert gradc_cli("compile", folder / "forward.pb", "-o", folder / "grads.pb").returncode == 0
    common = ("--feed", folder / "data.npz", "--params", folder / "init.npz", "--fetch", "*.w_0@GRAD", "--fetch",
              "*.b_0@GRAD")
    run = gradc_cli("run", folder / "grads.pb", "--per-example", *common, "-o", folder / "mine.npz")
    assert run.returncode == 0, run.stderr
    mine, paddle = np.load(folder / "mine.npz"), np.load(folder / "per_example.npz")
    assert sorted(mine.files) == sorted(paddle.files)
    for name in paddle.files:
        np.testing.assert_allclose(mine[name], paddle[name], rtol=0, atol=4e-7, err_msg=name)
    norms = np.sqrt(sum(np.sum(np.square(mine[name].reshape(8, -1)), 1) for name in mine.files))
    np.testing.assert_allclose(norms, META["dpsgd"]["norms"], rtol=1e-6)
    scale, init, noise = np.minimum(1.0, CLIP / norms), np.load(folder / "init.npz"), np.load(folder / "noise.npz")
    stepped = np.load(folder / "dp_step.npz")
    for name in stepped.files:
        update = (np.tensordot(scale, mine[name + "@GRAD"], 1) + noise[name]) / len(norms)
        np.testing.assert_allclose(init[name] - LR * update, stepped[name], rtol=0, atol=1e-7, err_msg=name)
    batch = gradc_cli("run", folder / "grads.pb", *common, "-o", folder / "batch.npz")
    assert batch.returncode == 0, batch.stderr
    for name, value in np.load(folder / "batch.npz").items():
        np.testing.assert_allclose(mine[name].mean(0), value, rtol=0, atol=1e-7, err_msg=name)


def test_a_parameter_no_file_gives_is_named_when_a_startup_initialises_it(files, tmp_path):
    """A client's file that lost a parameter (linear_1.b_0), given with Paddle's startup program: the parameter was
    drawn afresh by the startup's initialiser and trained into the average, unsaid. Now one note names it; the
    whole file draws none."""
    folder = files / "mlp"
    values = dict(np.load(folder / "init.npz"))
    lost = sorted(values)[2]
    del values[lost]
    np.savez(tmp_path / "lost.npz", **values)
    common = ("train", folder / "t.pb", "--startup", folder / "startup.pb", "--startup", folder / "t.startup.pb",
              "--data", folder / "client_0.npz", "--batch-size", BATCH)
    partial = gradc_cli(*common, "--params", tmp_path / "lost.npz")
    assert partial.returncode == 0, partial.stderr
    warned = [line for line in partial.stderr.splitlines() if line.startswith("gradc: note:")]
    assert len(warned) == 1 and "1 of the 4 parameters" in warned[0] and lost in warned[0], partial.stderr
    whole = gradc_cli(*common, "--params", folder / "init.npz")
    assert whole.returncode == 0 and "note" not in whole.stderr, whole.stderr
    run = gradc_cli("run", folder / "forward.pb", "--startup", folder / "startup.pb", "--params",
                    tmp_path / "lost.npz", "--feed", folder / "client_0.npz", "--fetch", META["mlp"]["loss"])
    assert run.returncode == 0 and lost in run.stderr, run.stderr


def test_run_out_with_nothing_fetched_is_refused(files, tmp_path):
    """`gradc run --per-example -o grads.npz` without --fetch ran every example and wrote an empty file ("wrote
    grads.npz"), the per-example gradients nowhere: now one line says to name them, and nothing is written."""
    folder = files / "dpsgd"
    assert gradc_cli("compile", folder / "forward.pb", "-o", tmp_path / "grads.pb").returncode == 0
    run = gradc_cli("run", tmp_path / "grads.pb", "--per-example", "--feed", folder / "data.npz", "--params",
                    folder / "init.npz", "-o", tmp_path / "empty.npz")
    assert run.returncode == 1 and run.stdout == ""
    assert run.stderr.startswith("gradc: error: --out") and "--fetch" in run.stderr and run.stderr.count("\n") == 1
    assert not (tmp_path / "empty.npz").exists()


def test_info_names_a_value_of_another_dtype_that_params_refuses(files, tmp_path):
    """The server's np.average of the clients' float32 files (weights by shard size) is float64, which train refuses
    (as Paddle's set_program_state does); `gradc info PROGRAM --params` said the file 'gives 4 of the 4 parameters'
    and nothing refused. Now it names each value of another dtype, as it names those of another shape, and counts
    them refused beside the 4 given."""
    folder = files / "mlp"
    values = dict(np.load(folder / "init.npz"))
    averaged = {name: np.average([value, value], axis=0, weights=[12, 16]) for name, value in values.items()}
    np.savez(tmp_path / "averaged.npz", **averaged)
    info = gradc_cli("info", folder / "t.pb", "--params", tmp_path / "averaged.npz", "--json")
    assert info.returncode == 0, info.stderr
    facts = json.loads(info.stdout)["params"]
    assert facts["other_dtype"] == {name: {"file": "float64", "program": "float32"} for name in values}
    text = gradc_cli("info", folder / "t.pb", "--params", tmp_path / "averaged.npz").stdout
    assert f"another dtype (refused): {sorted(values)[0]} float64, the program's float32" in text
    assert f"gives {len(values)} of the {len(values)} parameters, {len(values)} of them refused (below)" in text
    train = gradc_cli("train", folder / "t.pb", "--startup", folder / "t.startup.pb", "--params",
                      tmp_path / "averaged.npz", "--data", folder / "client_0.npz")
    assert train.returncode == 1 and "float64" in train.stderr
    assert json.loads(gradc_cli("info", folder / "t.pb", "--params", folder / "init.npz",
                                "--json").stdout)["params"]["other_dtype"] == {}


def test_evaluate_says_where_fedprox_global_weights_go(files):
    """`gradc evaluate` of the FedProx forward on the data alone named w_global's four inputs "'a' and 'b' and 'c'
    and 'd'" and said to add them to the data, 48 copies each, where the same values for every batch go in --feed,
    as train says. Now the names are listed and, as they have no batch axis, --feed is named; with it (w_global the
    weights themselves: no proximal term), the loss and accuracy are those of Paddle's logits of the 48 examples."""
    folder = files / "fedprox"
    rounds = np.load(folder / "rounds.npz")
    final = {key.split("/", 1)[1]: value for key, value in rounds.items() if key.startswith("round_1/")}
    np.savez(folder / "final_weights.npz", **final)
    _globals_feed(folder / "w_global_final.npz", final)
    examples = [dict(np.load(folder / f"client_{client}.npz")) for client in range(len(SHARDS))]
    np.savez(folder / "all.npz", **{key: np.concatenate([shard[key] for shard in examples]) for key in examples[0]})
    common = ("evaluate", folder / "forward.pb", "--params", folder / "final_weights.npz", "--data", folder / "all.npz")
    refused = gradc_cli(*common)
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1
    names = sorted("global_" + name for name in final)
    assert ", ".join(f"'{name}'" for name in names[:-1]) + f" and '{names[-1]}'" in refused.stderr
    assert "--feed FIXED.npz" in refused.stderr
    evaluated = gradc_cli(*common, "--feed", folder / "w_global_final.npz", "--json")
    assert evaluated.returncode == 0, evaluated.stderr
    report = json.loads(evaluated.stdout)
    logits = np.load(folder / "outputs.npz")["logits"].astype(np.float64)
    labels = np.load(folder / "all.npz")["label"][:, 0]
    log_softmax = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    assert report["examples"] == sum(SHARDS)
    np.testing.assert_allclose(report["loss"], -log_softmax[np.arange(len(labels)), labels].mean(), rtol=1e-6)
    assert report["acc"] == np.mean(logits.argmax(1) == labels)
