"""gradc.training on the digits example: batching, evaluation in test mode, resuming bit for bit, NaN checks."""

import numpy as np
import pytest

import gradc
from gradc.training import Dataset, Trainer, forward_part
from gradc.training.eval_plan import EvalMetrics
from gradc.training.history import History
from gradc.training.programs import is_training_op

EXAMPLE = __import__("pathlib").Path(__file__).parent.parent / "examples" / "digits"
LOSS, ACC = "mean_0.tmp_0", "accuracy_0.tmp_2"


def digits(count, part="train"):
    with np.load(EXAMPLE / f"{part}.npz") as data:
        return {name: data[name][:count] for name in data.files}


def trainer(seed=0, **options):
    program = gradc.load(EXAMPLE / "forward.pb")
    startup = gradc.minimize(program, optimizer="adam", lr=0.01)
    return Trainer(program, [EXAMPLE / "startup.pb", startup], fetch=[LOSS, ACC], seed=seed, **options)


def test_batches_in_order_shuffled_and_without_the_last_partial_one():
    data = Dataset({"x": np.arange(10)[:, None], "y": np.arange(10)})
    assert [b["y"].tolist() for b in data.batches(0, 4)] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert [len(b["y"]) for b in data.batches(0, 4, drop_last=True)] == [4, 4]
    shuffled = [b["y"] for b in data.batches(3, 4, shuffle=True, seed=7)]
    assert sorted(np.concatenate(shuffled).tolist()) == list(range(10))
    assert all((a["x"][:, 0] == a["y"]).all() for a in data.batches(3, 4, shuffle=True, seed=7)), "rows stay together"
    again = [b["y"] for b in data.batches(3, 4, shuffle=True, seed=7)]
    assert all((a == b).all() for a, b in zip(shuffled, again))
    other = np.concatenate([b["y"] for b in data.batches(4, 4, shuffle=True, seed=7)])
    assert (other != np.concatenate(shuffled)).any(), "each epoch has its own order"


def test_arrays_must_share_their_first_dimension():
    with pytest.raises(gradc.GradcError, match=r"share their first dimension.*x \[3, 2\], y \[4\]"):
        Dataset({"x": np.zeros((3, 2)), "y": np.zeros(4)})


def test_a_directory_of_npy_files_is_memory_mapped(tmp_path):
    np.save(tmp_path / "x.npy", np.arange(12, dtype=np.float32).reshape(6, 2))
    np.save(tmp_path / "y.npy", np.arange(6))
    data = Dataset.load(tmp_path)
    assert isinstance(data.arrays["x"], np.memmap) and data.size == 6
    batch = next(data.batches(0, 4, shuffle=True, seed=1))
    assert not isinstance(batch["x"], np.memmap) and (batch["x"][:, 0] == 2 * batch["y"]).all()
    (tmp_path / "y.npy").write_bytes((tmp_path / "y.npy").read_bytes()[:-8])
    with pytest.raises(gradc.FormatError, match="y.npy.*header declares shape \\[6\\]"):
        Dataset.load(tmp_path)
    np.save(tmp_path / "y.npy", np.array([{"a": 1}] * 6, dtype=object))
    with pytest.raises(gradc.FormatError, match="Python objects"):
        Dataset.load(tmp_path)


def test_the_forward_part_has_no_training_ops_and_runs_in_test_mode():
    t = trainer()
    forward = forward_part(t.program)
    assert not any(is_training_op(op) for op in forward.global_block.ops)
    modes = {op.type: op.attrs["is_test"] for op in forward.global_block.ops if "is_test" in op.attrs}
    assert {"batch_norm", "dropout"} <= modes.keys() and all(modes.values())
    assert not any(op.attrs.get("is_test") for op in t.program.global_block.ops), "the training program keeps training"


def test_evaluation_changes_nothing_and_averages_over_examples():
    t = trainer()
    t.fit(digits(96), epochs=1, batch_size=32)
    before = {name: value.copy() for name, value in t.persistable_values().items()}
    test = digits(50, "test")
    first, second = t.evaluate(test, batch_size=16), t.evaluate(test, batch_size=50)
    assert first.keys() == {LOSS, ACC}
    np.testing.assert_allclose(first[LOSS], second[LOSS], rtol=1e-5)   # batches of 16 weighted by their size
    np.testing.assert_allclose(first[ACC], second[ACC], rtol=1e-6)
    assert all((t.persistable_values()[name] == value).all() for name, value in before.items())


def test_two_then_three_epochs_with_a_resume_equal_five_bit_for_bit(tmp_path):
    data = digits(96)
    options = {"batch_size": 32, "shuffle": True, "eval_data": digits(32, "test")}
    straight = trainer(seed=3)
    straight.fit(data, epochs=5, **options)
    first = trainer(seed=3)
    first.fit(data, epochs=2, checkpoint_dir=tmp_path, **options)
    resumed = trainer(seed=3)
    history = resumed.fit(data, epochs=5, resume=tmp_path, **options)
    assert resumed.step == straight.step == 15 and len(history.epochs) == 5
    expected, got = straight.persistable_values(), resumed.persistable_values()
    assert expected.keys() == got.keys()
    for name in expected:
        assert np.array_equal(expected[name], got[name]), name
    assert history.steps == straight.history.steps and history.epochs == straight.history.epochs
    with pytest.raises(gradc.GradcError, match="other settings.*batch_size 32 -> 16"):
        trainer(seed=3).fit(data, epochs=6, resume=tmp_path, **{**options, "batch_size": 16})


def test_a_paddle_stream_resumes_where_it_stood_bit_for_bit(tmp_path):
    """Seeded once (paddle_stream), the draws of a step depend on every draw before it: a checkpoint holds where the
    stream stands, so the dropouts of a resumed run draw what the uninterrupted run drew."""
    data = digits(64)
    options = {"batch_size": 32, "eval_data": digits(32, "test")}
    straight = trainer(seed=3, paddle_stream=True)
    straight.fit(data, epochs=3, **options)
    trainer(seed=3, paddle_stream=True).fit(data, epochs=1, checkpoint_dir=tmp_path, **options)
    resumed = trainer(seed=3, paddle_stream=True)
    resumed.fit(data, epochs=3, resume=tmp_path, **options)
    assert resumed.history.steps == straight.history.steps
    assert all(np.array_equal(v, resumed.persistable_values()[k]) for k, v in straight.persistable_values().items())
    per_step = trainer(seed=3)
    per_step.fit(data, epochs=3, **options)
    assert per_step.history.steps != straight.history.steps   # another stream: other masks
    with pytest.raises(gradc.GradcError, match="other settings.*paddle_stream True -> None"):
        trainer(seed=3).fit(data, epochs=4, resume=tmp_path, **options)


def test_check_nan_names_the_op_the_var_and_the_step():
    net = gradc.ProgramBuilder()
    x = net.data("x", [-1, 2])
    hidden = net.fc(x, 2)
    loss = net.mean(net.op("log", {"X": hidden})[0])
    startup = gradc.minimize(net.program, loss, "sgd", lr=0.1)
    t = Trainer(net.program, [net.startup, startup], check_nan=True)
    t.scope["fc_0.w_0"] = np.ones((2, 2), np.float32)
    t.train_step({"x": np.ones((2, 2), np.float32)})   # positive: log is finite
    t.scope["fc_0.w_0"] = -np.ones((2, 2), np.float32)
    index = [op.type for op in net.program.global_block.ops].index("log")
    with pytest.raises(gradc.ExecutionError, match=rf"^step 2: block 0, op {index} \(log\) wrote NaN into "
                                                   r"'log_0.tmp_0' \(output Out\); a forward op; it read "
                                                   r"X=fc_0.tmp_1 float32\[2, 2\] min -2.025 max -2.025$"):
        t.train_step({"x": np.ones((2, 2), np.float32)})


@pytest.mark.parametrize("metrics, message", [
    (dict(topk=[11]), r"top-11 accuracy of 10 classes \('linear_0.tmp_1'\): every example would count as right"),
    (dict(topk=[1], mask="nope"), r"--mask nope: the data has no such array")])
def test_evaluation_metrics_the_data_cannot_give_are_refused_before_the_first_step(metrics, message):
    """The labels were fitted to the evaluation only in each epoch's evaluation: a k past the class count or a mask
    not in the data trained a whole epoch first. Now check_data fits them: refused with no step taken."""
    t = trainer()
    with pytest.raises(gradc.GradcError, match=message):
        t.fit(digits(64), batch_size=16, eval_data=digits(32, "test"), metrics=EvalMetrics(**metrics))
    assert t.step == 0


def test_a_mid_epoch_history_without_the_means_parts_resumes_to_the_epochs_mean():
    """A checkpoint an older gradc saved mid-epoch holds no epoch_parts: a PSNR derived from the epoch's MSE raised
    KeyError 'mse' on resume; it is then the steps' mean, as that gradc gave it."""
    state = {"fetch": ["psnr"], "steps": [[7.0], [9.0]], "epochs": [], "examples": 8, "seconds": 0.1,
             "epoch_sums": [7.0 * 3 + 9.0 * 5], "epoch_examples": 8, "last_eval": {}}
    history = History.from_state(["psnr"], state, averaged=["mse"], derive=lambda means: {"psnr": -1.0})
    assert history.running() == {"psnr": (7.0 * 3 + 9.0 * 5) / 8}


def test_a_mid_epoch_history_without_the_means_parts_keeps_the_steps_mean_to_the_epochs_end():
    """After such a resume, the epoch's parts hold only the steps since: the MSE of 4 of 12 examples' parts over all
    12 gave a PSNR of 24.77 where every step's was 20; the epoch's mean of the steps, to its end, then the parts."""
    state = {"fetch": ["psnr"], "steps": [[20.0], [20.0]], "epochs": [], "examples": 8, "seconds": 0.1,
             "epoch_sums": [20.0 * 8], "epoch_examples": 8, "last_eval": {}}
    history = History.from_state(["psnr"], state, averaged=["mse"],
                                 derive=lambda means: {"psnr": 10 * np.log10(1 / means["mse"])})
    history.add_step([20.0], 4, [0.01])
    assert history.running() == {"psnr": 20.0}
    resumed = History.from_state(["psnr"], history.state(), averaged=["mse"], derive=lambda means: {"psnr": -1.0})
    assert resumed.running() == {"psnr": 20.0}   # saved again mid-epoch: still the steps' mean
    history.end_epoch(0, {})
    history.add_step([30.0], 4, [0.001])
    assert history.running()["psnr"] == pytest.approx(30.0)
