"""The adversarial-robustness researcher's programs of docs/tools.md's 'An adversarial-robustness researcher's week',
written with Paddle 3.3.1's layers in legacy static mode (FLAGS_enable_pir_api=0), on 1x12x12 images of 3 classes:

- forward.pb: a small CNN (Conv2D(1, 4, 3), BatchNorm2D, relu, max_pool2d, flatten, Dropout(0.25), Linear(144, 3))
  and cross_entropy's mean, as main.clone() before minimize saves it; startup.pb its initialiser.
- clean.npz: its parameters (BatchNorm's running statistics too) after 6 Momentum(0.1) steps of 8 clean images.
- fgsm.pb: main.clone(for_test=True) (batch norm on its running statistics, no dropout) with
  paddle.static.gradients(loss, x) and the FGSM example clip(x + eps * sign(x@GRAD), 0, 1) in the program; fed x,
  label and eps. fgsm_train.pb: the same from the training-mode clone (batch statistics, dropout).
- attack.npz: Paddle's input gradients of the 16 test images (eval and train mode), its FGSM examples (eps 0.1), PGD's
  random start and examples (5 steps of 0.03 in the 0.1-ball, the gradient from fgsm.pb); moved.npz: batch norm's
  running statistics as the training-mode attack leaves them (the clean ones are put back after).
- adversarial training: from clean.npz and a zero velocity, 4 steps, each a PGD (3 steps, eval mode) from the current
  weights, then one Momentum step on the adversarial batch; Paddle's losses, the PGD starts and adv_trained.npz.
- meta.json: the vars' names, Paddle's losses and robust accuracies.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week29.py tests/data/paddle/user_week29
"""

import json
import sys
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
import paddle_legacy_shim
from paddle_programs import without_callstacks, write_gz

SIZE, CLASSES, TRAIN, TEST, BATCH, CLEAN_STEPS, ADV_STEPS = 12, 3, 48, 16, 8, 6, 4
EPS, ALPHA, PGD_STEPS, ADV_PGD_STEPS = 0.1, 0.03, 5, 3
RNG = np.random.default_rng(29)


def images(count: int) -> tuple[np.ndarray, np.ndarray]:
    """A horizontal bar, a vertical bar or a diagonal at a random place, on noise, in [0, 1]."""
    labels = RNG.integers(0, CLASSES, count)
    out = RNG.uniform(0, 0.3, (count, 1, SIZE, SIZE))
    for image, label in zip(out, labels):
        at = RNG.integers(2, SIZE - 2)
        if label == 0:
            image[0, at - 1:at + 1] += 0.6
        elif label == 1:
            image[0, :, at - 1:at + 1] += 0.6
        else:
            image[0] += 0.6 * np.eye(SIZE, k=int(at) - SIZE // 2)
    return out.clip(0, 1).astype(np.float32), labels.reshape(-1, 1).astype(np.int64)


def programs():
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 29
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [-1, 1, SIZE, SIZE], "float32")
        label = paddle.static.data("label", [-1, 1], "int64")
        hidden = F.relu(paddle.nn.BatchNorm2D(4)(paddle.nn.Conv2D(1, 4, 3, padding=1)(x)))
        hidden = paddle.nn.Dropout(0.25)(paddle.flatten(F.max_pool2d(hidden, 2), 1))
        logits = paddle.nn.Linear(4 * (SIZE // 2) ** 2, CLASSES)(hidden)
        loss = paddle.mean(F.cross_entropy(logits, label))
    forward, test = main.clone(), main.clone(for_test=True)
    with paddle.static.program_guard(main, startup):
        paddle.optimizer.Momentum(0.1, momentum=0.9).minimize(loss)
    names = {"loss": loss.name, "logits": logits.name}
    return main, forward, test, startup, names


def fgsm_program(base, names: dict):
    """The attack in the program, as a Paddle user writes it: the input gradient by paddle.static.gradients and the
    FGSM example from it (eps fed, [1])."""
    attack = base.clone()
    with paddle.static.program_guard(attack, paddle.static.Program()):
        block = attack.global_block()
        x, loss = block.var("x"), block.var(names["loss"])
        eps = paddle.static.data("eps", [1], "float32")
        x.stop_gradient = False   # Paddle's gradients() gives no gradient of a stop_gradient input (a data var's)
        (grad,) = paddle.static.gradients(loss, x)
        adv = paddle.clip(x + eps * paddle.sign(grad), 0.0, 1.0)
    return attack, {"grad": grad.name, "adv": adv.name}


def pgd(exe, attack, names, x, label, start, steps):
    """PGD in the eps-ball around x from x + start: steps of ALPHA * sign(grad), projected and clipped to [0, 1]."""
    adv = np.clip(x + start, 0, 1).astype(np.float32)
    for _ in range(steps):
        (grad,) = exe.run(attack, feed={"x": adv, "label": label, "eps": np.zeros(1, np.float32)},
                          fetch_list=[names["grad"]])
        adv = np.clip(np.clip(adv + ALPHA * np.sign(grad), x - EPS, x + EPS), 0, 1).astype(np.float32)
    return adv


def accuracy(exe, test, names, x, label) -> float:
    (logits,) = exe.run(test, feed={"x": x, "label": label}, fetch_list=[names["logits"]])
    return float(np.mean(logits.argmax(1) == label[:, 0]))


def params_of(scope, program) -> dict:
    persistable = [var.name for var in program.list_vars() if var.persistable and var.name not in ("feed", "fetch")
                   and "velocity" not in var.name and "learning_rate" not in var.name]
    return {name: np.array(scope.var(name).get_tensor()) for name in persistable}


def main(out: Path) -> None:
    paddle_legacy_shim.install()
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    train_x, train_label = images(TRAIN)
    test_x, test_label = images(TEST)
    np.savez(out / "data.npz", x=train_x, label=train_label)
    np.savez(out / "test.npz", x=test_x, label=test_label)
    main_prog, forward, test, startup, names = programs()
    fgsm, attack_names = fgsm_program(test, names)
    fgsm_train, _ = fgsm_program(forward, names)
    meta = {**names, **attack_names, "eps": EPS, "alpha": ALPHA, "pgd_steps": PGD_STEPS}
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        clean_losses = []
        for step in range(CLEAN_STEPS):
            batch = slice(step * BATCH, (step + 1) * BATCH)
            (loss,) = exe.run(main_prog, feed={"x": train_x[batch], "label": train_label[batch]},
                              fetch_list=[names["loss"]])
            clean_losses.append(float(loss))
        clean = params_of(scope, forward)
        np.savez(out / "clean.npz", **clean)
        feed = {"x": test_x, "label": test_label, "eps": np.array([EPS], np.float32)}
        grad, adv = exe.run(fgsm, feed=feed, fetch_list=[attack_names["grad"], attack_names["adv"]])
        (grad_train,) = exe.run(fgsm_train, feed=feed, fetch_list=[attack_names["grad"]])
        # the training-mode attack moved batch norm's running statistics: kept, then the clean values put back
        moved = params_of(scope, forward)
        meta["moved_by_train_mode_attack"] = sorted(name for name in clean if not np.array_equal(clean[name],
                                                                                                moved[name]))
        np.savez(out / "moved.npz", **{name: moved[name] for name in meta["moved_by_train_mode_attack"]})
        for name, value in clean.items():
            scope.var(name).get_tensor().set(value, paddle.CPUPlace())
        start = RNG.uniform(-EPS, EPS, test_x.shape).astype(np.float32)
        pgd_adv = pgd(exe, fgsm, attack_names, test_x, test_label, start, PGD_STEPS)
        meta["accuracy"] = {"clean": accuracy(exe, test, names, test_x, test_label),
                            "fgsm": accuracy(exe, test, names, adv, test_label),
                            "pgd": accuracy(exe, test, names, pgd_adv, test_label)}
        np.savez(out / "attack.npz", grad=grad, grad_train=grad_train, fgsm=adv, start=start, pgd=pgd_adv)
        for var in main_prog.list_vars():   # adversarial training starts a fresh Momentum from the clean weights
            if "velocity" in var.name:
                scope.var(var.name).get_tensor().set(np.zeros(var.shape, np.float32), paddle.CPUPlace())
        starts, adv_losses = [], []
        for step in range(ADV_STEPS):
            batch = slice(step * BATCH, (step + 1) * BATCH)
            starts.append(RNG.uniform(-EPS, EPS, train_x[batch].shape).astype(np.float32))
            adv_batch = pgd(exe, fgsm, attack_names, train_x[batch], train_label[batch], starts[-1], ADV_PGD_STEPS)
            (loss,) = exe.run(main_prog, feed={"x": adv_batch, "label": train_label[batch]},
                              fetch_list=[names["loss"]])
            adv_losses.append(float(loss))
        np.savez(out / "adv_trained.npz", **params_of(scope, forward))
        np.savez(out / "adv_starts.npz", start=np.stack(starts))
        meta["adversarial"] = {"steps": ADV_STEPS, "pgd_steps": ADV_PGD_STEPS, "losses": adv_losses,
                               "accuracy_pgd": accuracy(exe, test, names, pgd(exe, fgsm, attack_names, test_x,
                                                                              test_label, start, PGD_STEPS),
                                                        test_label)}
    meta["clean_losses"] = clean_losses
    for name, program in [("forward", forward), ("startup", startup), ("fgsm", fgsm), ("fgsm_train", fgsm_train),
                          ("train", main_prog)]:
        write_gz(out / f"{name}.pb", without_callstacks(program))
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


if __name__ == "__main__":
    Path(sys.argv[1]).mkdir(parents=True, exist_ok=True)
    main(Path(sys.argv[1]))
