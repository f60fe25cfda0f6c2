"""The tabular data scientist's programs of docs/tools.md's 'A tabular data scientist's week', written with Paddle
3.3.1's layers in legacy static mode (FLAGS_enable_pir_api=0), over CSV files of a synthetic customer table:

- four numeric columns on their own scales (income, age, balance, visits), standardised in the program by a
  persistable mean and std (trainable=False, the training set's), a small categorical column (a region id, 6
  values) and a 64-bit hashed id (a merchant: hashes up to 2**62, taken modulo 1000 buckets by the program, as
  hashed features are), each through an embedding;
- a wide-and-deep net with a TabNet-lite feature gate (the deep input times a sigmoid mask of itself): a binary
  head (did the customer churn; 1 in 4 positive) with a class weight (binary_cross_entropy_with_logits,
  pos_weight 3, a sigmoid_cross_entropy_with_logits op with a pos_weight input), a regression head (next month's
  spend) with a Huber loss (smooth_l1_loss, delta 1: a huber_loss op); paddle.static.auc and accuracy of the
  churn probability;
- Paddle's Adam (lr 0.01) over train.csv's rows in order, batches of 32, 2 epochs (16 steps): each step's loss,
  AUC (cumulative, as the auc op's persistable counts make it), batch AUC and accuracy;
- the scoring net saved by save_inference_model from the trained scope, and Paddle's Predictor's scores of new.csv.

Written (programs gzipped): model.pb (before minimize), startup.pb, train.csv, valid.csv, new.csv, trained.npz
(Paddle's trained parameters), scores.npz (the Predictor's churn probability and spend of new.csv's rows),
score.pdmodel, meta.json (the per-step values and the vars' names).

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week24.py tests/data/paddle/user_week24
"""

import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
import paddle_legacy_shim
from paddle_programs import without_callstacks, write_gz

TRAIN, VALID, NEW, BATCH, EPOCHS, BUCKETS, REGIONS = 256, 128, 40, 32, 2, 1000, 6
NUMERIC = ["income", "age", "balance", "visits"]
RNG = np.random.default_rng(24)


def table(rows: int) -> dict[str, np.ndarray]:
    """Customers: numeric columns on their own scales, a region, a merchant's 64-bit hash (few merchants, so their
    buckets repeat), churn (about 1 in 4) and spend, both depending on all of them."""
    numeric = np.stack([RNG.normal(52000, 18000, rows), RNG.normal(41, 12, rows), RNG.normal(3000, 2500, rows),
                        RNG.poisson(6, rows).astype(float)], 1).round(2)
    region = RNG.integers(0, REGIONS, (rows, 1))
    merchants = RNG.integers(2**52, 2**62, 60)   # hashes: even ids over 2**53 that floats do not hold
    merchant = merchants[RNG.integers(0, 60, rows)].reshape(rows, 1)
    score = ((numeric[:, 2] - 3000) / 2500 - (numeric[:, 3] - 6) / 3 + 0.4 * (region[:, 0] == 2)
             + 0.8 * (merchant[:, 0] % BUCKETS < 300) + RNG.normal(0, 0.7, rows))
    churn = (score > np.quantile(score, 0.75)).astype(np.int64).reshape(rows, 1)
    spend = (numeric[:, :1] / 20000 + 0.5 * numeric[:, 3:] / 6 + RNG.normal(0, 0.5, (rows, 1))).round(3)
    return {"num": numeric.astype(np.float32), "region": region, "merchant": merchant, "churn": churn,
            "spend": spend.astype(np.float32)}


def write_csv(path: Path, data: dict[str, np.ndarray], names=("num", "region", "merchant", "churn", "spend")) -> None:
    """The header repeats a var's name over its columns (num,num,num,num,...), as gradc's --data reads it; the
    hashes are written whole (Python ints), as a database exports them."""
    header = [name for name in names for _ in range(data[name].shape[1])]
    rows = [",".join(str(value) for name in names for value in data[name][row])   # float32's shortest digits
            for row in range(len(data["num"]))]
    path.write_text("\n".join([",".join(header), *rows]) + "\n")


def scoring_net(num, region, merchant, mean, std):
    """Standardise, embed, gate the deep input by a sigmoid mask of itself (TabNet-lite), a deep MLP and a wide part
    (a linear map of the standardised columns and a one-wide embedding of the merchant): churn logit, spend."""
    standard = (num - mean) / std
    bucket = paddle.remainder(merchant, paddle.full([1], BUCKETS, "int64"))
    region_vector = paddle.reshape(paddle.nn.Embedding(REGIONS, 4, weight_attr="region.emb")(region), [-1, 4])
    merchant_vector = paddle.reshape(paddle.nn.Embedding(BUCKETS, 8, weight_attr="merchant.emb")(bucket), [-1, 8])
    deep = paddle.concat([standard, region_vector, merchant_vector], 1)
    gated = deep * F.sigmoid(paddle.static.nn.fc(deep, 16, name="gate"))
    hidden = paddle.static.nn.fc(paddle.static.nn.fc(gated, 32, activation="relu", name="deep1"), 16,
                                 activation="relu", name="deep2")
    wide = (paddle.static.nn.fc(standard, 1, name="wide")
            + paddle.reshape(paddle.nn.Embedding(BUCKETS, 1, weight_attr="merchant.wide")(bucket), [-1, 1]))
    return paddle.static.nn.fc(hidden, 1, name="churn_head") + wide, paddle.static.nn.fc(hidden, 1, name="spend_head")


def programs(train: dict[str, np.ndarray]):
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 24
    with paddle.static.program_guard(main, startup):
        num = paddle.static.data("num", [-1, 4], "float32")
        region = paddle.static.data("region", [-1, 1], "int64")
        merchant = paddle.static.data("merchant", [-1, 1], "int64")
        churn = paddle.static.data("churn", [-1, 1], "int64")
        spend = paddle.static.data("spend", [-1, 1], "float32")
        mean, std = (paddle.static.create_parameter(
            [4], "float32", attr=paddle.ParamAttr(name=f"norm.{name}", trainable=False,
                                                  initializer=paddle.nn.initializer.Assign(value)))
            for name, value in (("mean", train["num"].mean(0)), ("std", train["num"].std(0))))
        logit, predicted = scoring_net(num, region, merchant, mean, std)
        bce = F.binary_cross_entropy_with_logits(logit, paddle.cast(churn, "float32"),
                                                 pos_weight=paddle.full([1], 3.0, "float32"))
        loss = bce + 0.5 * F.smooth_l1_loss(predicted, spend, delta=1.0)
        probability = F.sigmoid(logit)
        scores = paddle.concat([1 - probability, probability], 1)
        auc, batch_auc, _ = paddle.static.auc(scores, churn)
        accuracy = paddle.static.accuracy(scores, churn)
    forward = main.clone()
    with paddle.static.program_guard(main, startup):
        paddle.optimizer.Adam(0.01).minimize(loss)
    names = {"loss": loss.name, "bce": bce.name, "auc": auc.name, "batch_auc": batch_auc.name,
             "accuracy": accuracy.name, "probability": probability.name, "spend": predicted.name}
    return main, forward, startup, names


def export(out: Path, exe, new: dict[str, np.ndarray], meta: dict) -> None:
    """The scoring net alone from the trained scope (the same parameter names), saved for inference, and the
    Predictor's churn probability and spend of new.csv's rows."""
    infer, infer_startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(infer, infer_startup):
        inputs = [paddle.static.data(name, [-1, width], dtype) for name, width, dtype in
                  (("num", 4, "float32"), ("region", 1, "int64"), ("merchant", 1, "int64"))]
        mean, std = (paddle.static.create_parameter([4], "float32", attr=paddle.ParamAttr(name=f"norm.{name}"))
                     for name in ("mean", "std"))
        logit, predicted = scoring_net(*inputs, mean, std)
        outputs = [F.sigmoid(logit), predicted]
    with tempfile.TemporaryDirectory() as saved:
        paddle.static.save_inference_model(f"{saved}/score", inputs, outputs, exe, program=infer)
        write_gz(out / "score.pdmodel", Path(f"{saved}/score.pdmodel").read_bytes())
        predictor = paddle.inference.create_predictor(paddle.inference.Config(f"{saved}/score.pdmodel",
                                                                              f"{saved}/score.pdiparams"))
        for name in ("num", "region", "merchant"):
            predictor.get_input_handle(name).copy_from_cpu(new[name])
        predictor.run()
        probability, spend = (predictor.get_output_handle(name).copy_to_cpu()
                              for name in predictor.get_output_names())
    np.savez(out / "scores.npz", probability=probability, spend=spend)
    meta["infer"] = predictor.get_output_names()


def main(out: Path) -> None:
    paddle_legacy_shim.install()
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    train, valid, new = table(TRAIN), table(VALID), table(NEW)
    write_csv(out / "train.csv", train)
    write_csv(out / "valid.csv", valid)
    write_csv(out / "new.csv", new, ("num", "region", "merchant"))
    main_program, forward, startup, names = programs(train)
    steps = {key: [] for key in ("loss", "auc", "batch_auc", "accuracy")}
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        for _ in range(EPOCHS):
            for start in range(0, TRAIN, BATCH):
                feed = {key: value[start:start + BATCH] for key, value in train.items()}
                values = exe.run(main_program, feed=feed, fetch_list=[names[key] for key in steps])
                for key, value in zip(steps, values):
                    steps[key].append(float(np.asarray(value).reshape(-1)[0]))
        trained = {param.name: np.array(scope.var(param.name).get_tensor())
                   for param in main_program.global_block().all_parameters()}
        export(out, exe, new, meta := {})
    write_gz(out / "model.pb", without_callstacks(forward))
    write_gz(out / "startup.pb", without_callstacks(startup))
    np.savez(out / "trained.npz", **trained)
    meta.update({"names": names, "steps": steps, "batch": BATCH, "epochs": EPOCHS})
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


if __name__ == "__main__":
    Path(sys.argv[1]).mkdir(parents=True, exist_ok=True)
    main(Path(sys.argv[1]))
