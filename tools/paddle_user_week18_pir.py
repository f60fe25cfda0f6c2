"""The PIR half of tools/paddle_user_week18.py (run by it with FLAGS_enable_pir_api=1): the keyword model written with
paddle.audio.features.MFCC in dygraph and saved by paddle.jit.save (kws_pir.json / .pdiparams), and a
paddle.signal.stft -> istft round trip saved the same way (istft_pir.json), with Paddle's outputs on a batch and the
spotter's after Paddle fine-tuned it (pir.npz); the vocoder trained by Paddle's PIR minimize (vocoder_pir_*); float64
FFT cases (fft_*.json, fft_cases.npz). Prints Paddle's losses and its schedulers' rates (SCHEDULES) as one JSON line.

    /path/to/paddle/python tools/paddle_user_week18_pir.py tests/data/paddle/user_week18
"""

import functools
import json
import sys
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle.audio.features import MFCC
from paddle.base import core
from paddle_programs import persistable_values
from paddle_user_week18 import HOP, N_FFT, N_MELS, N_MFCC, SAMPLES, SR, KeywordNet

RNG = np.random.default_rng(181)


class KeywordSpotter(paddle.nn.Layer):
    def __init__(self):
        super().__init__()
        self.features = MFCC(sr=SR, n_mfcc=N_MFCC, n_fft=N_FFT, hop_length=HOP, n_mels=N_MELS)
        self.net = KeywordNet()

    def forward(self, wav):
        return paddle.nn.functional.softmax(self.net(self.features(wav)))


class RoundTrip(paddle.nn.Layer):
    """stft then istft with a Hann window: the waveform back, and the spectrogram's magnitude. The window is a
    tensor bound at construction, as paddle.audio's Spectrogram binds its own: stft of a window that is a traced value
    (made in forward, or a buffer) fails in to_static (its assert takes len() of a pir.Value)."""

    def __init__(self):
        super().__init__()
        window = paddle.audio.functional.get_window("hann", N_FFT, dtype="float32")
        self.stft = functools.partial(paddle.signal.stft, n_fft=N_FFT, hop_length=HOP, window=window)
        self.istft = functools.partial(paddle.signal.istft, n_fft=N_FFT, hop_length=HOP, window=window, length=SAMPLES)
        self.register_buffer("window", window)   # as Spectrogram does; jit.save fails on a layer with no state

    def forward(self, wav):
        spec = self.stft(wav)
        return self.istft(spec), paddle.abs(spec)


def save(layer, path: Path, wav: np.ndarray) -> list:
    """jit.save the layer for [None, SAMPLES] float32 input; Paddle's outputs of the saved model on wav."""
    layer.eval()
    static = paddle.jit.to_static(layer, input_spec=[paddle.static.InputSpec([None, SAMPLES], "float32", "wav")],
                                  full_graph=True)
    paddle.jit.save(static, str(path))
    loaded = paddle.jit.load(str(path))
    outputs = loaded(paddle.to_tensor(wav))
    return [value.numpy() for value in (outputs if isinstance(outputs, (list, tuple)) else [outputs])]


def vocoder_pir(out: Path, targets: np.ndarray) -> dict:
    """The vocoder of paddle_user_week18.py in PIR static mode, with paddle.signal.stft / istft themselves (no window:
    a window that is a static value fails stft's len() assert), trained by Paddle's Adam with OneCycleLR over the 4
    batches: vocoder_pir_train.json (Paddle's minimize), vocoder_pir_init.npz (its persistables after the startup
    program), Paddle's losses."""
    paddle.enable_static()
    paddle.seed(18)
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        target = paddle.static.data("target", [-1, SAMPLES], "float32")
        log_mag = paddle.log(paddle.abs(paddle.signal.stft(target, N_FFT, HOP)) + 1e-3)
        hidden = F.silu(paddle.nn.Conv1D(N_FFT // 2 + 1, 24, 3, padding=1)(log_mag))
        magnitude = paddle.exp(paddle.nn.Conv1D(24, N_FFT // 2 + 1, 1)(hidden))
        phase = paddle.nn.Conv1D(24, N_FFT // 2 + 1, 1)(hidden)
        spec = paddle.complex(magnitude * paddle.cos(phase), magnitude * paddle.sin(phase))
        wav = paddle.signal.istft(spec, N_FFT, HOP, length=SAMPLES)
        loss = paddle.mean(paddle.abs(paddle.abs(paddle.signal.stft(wav, N_FFT, HOP))
                                      - paddle.abs(paddle.signal.stft(target, N_FFT, HOP))))
        schedule = paddle.optimizer.lr.OneCycleLR(max_learning_rate=0.003, total_steps=4)
        paddle.optimizer.Adam(learning_rate=schedule).minimize(loss)
        paddle._pir_ops.fetch(loss, "loss", 0).persistable = True
    core.serialize_pir_program(main, str(out / "vocoder_pir_train.json"), True, False, True)
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    np.savez_compressed(out / "vocoder_pir_init.npz", **persistable_values(main))
    losses, rates = [], []
    for batch in targets.reshape(4, -1, SAMPLES):
        rates.append(schedule())
        losses.append(float(exe.run(main, feed={"target": batch}, fetch_list=[])[0]))
        schedule.step()
    paddle.disable_static()
    return {"vocoder_pir_losses": losses, "vocoder_pir_rates": rates}


def fine_tune(spotter: KeywordSpotter, data: dict) -> dict:
    """What gradc compile --add-loss cross-entropy --optimizer adam --lr 0.01 of the saved spotter trains: the mean
    cross-entropy of its logits (the softmax's input), Adam(0.01), in test mode (batch norm's running statistics), one
    step per batch of 4 of kws_data.npz; Paddle's losses and the probabilities of the tuned model."""
    optimizer = paddle.optimizer.Adam(0.01, parameters=spotter.parameters())
    losses = []
    for rows in np.split(np.arange(len(data["wav"])), len(data["wav"]) // 4):
        logits = spotter.net(spotter.features(paddle.to_tensor(data["wav"][rows])))
        loss = F.cross_entropy(logits, paddle.to_tensor(data["label"][rows]))
        loss.backward()
        optimizer.step()
        optimizer.clear_grad()
        losses.append(float(loss))
    return {"kws_pir_tuned_losses": losses}


FFT_CASES = {   # name -> the output of (x, y), both [2, 50] float64, whose weighted sum is the loss
    "stft_two_sided_ortho": lambda x, y: paddle.abs(paddle.signal.stft(x, 16, 5, onesided=False, normalized=True,
                                                                        pad_mode="constant")),
    "irfft_ortho_odd": lambda x, y: paddle.fft.irfft(paddle.complex(x[:, :13], y[:, :13]), n=15, norm="ortho"),
    "hfft": lambda x, y: paddle.fft.hfft(paddle.complex(x[:, :13], y[:, :13]), n=12),
    "ihfft_abs": lambda x, y: paddle.abs(paddle.fft.ihfft(x, n=20)),
    "rfftn_forward_abs": lambda x, y: paddle.abs(paddle.fft.rfftn(paddle.reshape(x, [2, 5, 10]), norm="forward")),
    "fft2_real": lambda x, y: paddle.real(paddle.fft.fft2(paddle.reshape(paddle.complex(x[:, :12], y[:, :12]),
                                                                          [2, 3, 4]))),
    "power_to_db_top_db": lambda x, y: paddle.audio.functional.power_to_db(paddle.square(x) + 1e-3, top_db=20.0),
}


def fft_cases(out: Path) -> None:
    """Each FFT_CASES output in float64 PIR: fft_<case>.json (the forward, its loss sum(out * w) fetched as "loss"),
    and fft_cases.npz: x, y, and per case w, Paddle's loss and its gradients for x and y (<case>.x_grad, ...)."""
    paddle.enable_static()
    arrays = {"x": RNG.standard_normal((2, 50)), "y": RNG.standard_normal((2, 50))}
    for name, make in FFT_CASES.items():
        main = paddle.static.Program()
        with paddle.static.program_guard(main, paddle.static.Program()):
            x, y = (paddle.static.data(key, [2, 50], "float64") for key in ("x", "y"))
            x.stop_gradient = y.stop_gradient = False
            result = make(x, y)
            weights = paddle.static.data("w", result.shape, "float64")
            loss = paddle.sum(result * weights)
            fetched = paddle._pir_ops.fetch(loss, "loss", 0)
            core.serialize_pir_program(main, str(out / f"fft_{name}.json"), True, False, True)
            main.global_block().remove_op(fetched.get_defining_op())   # Paddle's run below fetches by value
            grads = paddle.static.gradients([loss], [x, y])
        feed = {"x": arrays["x"], "y": arrays["y"], "w": RNG.standard_normal(result.shape)}
        fetched = paddle.static.Executor(paddle.CPUPlace()).run(main, feed=feed,
                                                                fetch_list=[loss, *[g for g in grads if g is not None]])
        values = dict(zip(["loss", *[key for key, g in zip(("x_grad", "y_grad"), grads) if g is not None]], fetched))
        arrays.update({f"{name}.w": feed["w"], **{f"{name}.{key}": value for key, value in values.items()}})
    np.savez_compressed(out / "fft_cases.npz", **arrays)
    paddle.disable_static()


SCHEDULES = [   # Paddle's schedulers gradc had no closed form of, as gradc train --lr-schedule takes them
    "OneCycleLR(max_learning_rate=0.003, total_steps=4)",
    "OneCycleLR(max_learning_rate=0.1, total_steps=20, three_phase=True, anneal_strategy='linear', phase_pct=0.25)",
    "OneCycleLR(max_learning_rate=0.1, total_steps=20, divide_factor=10, end_learning_rate=0.001, phase_pct=0.4)",
    "CyclicLR(base_learning_rate=0.01, max_learning_rate=0.1, step_size_up=3, step_size_down=5)",
    "CyclicLR(base_learning_rate=0.01, max_learning_rate=0.1, step_size_up=4, mode='triangular2')",
    "CyclicLR(base_learning_rate=0.01, max_learning_rate=0.1, step_size_up=4, mode='exp_range', exp_gamma=0.9)",
    "LinearLR(learning_rate=0.1, total_steps=7)",
    "LinearLR(learning_rate=0.1, total_steps=5, start_factor=0.5, end_factor=0.1)",
    "CosineAnnealingWarmRestarts(learning_rate=0.1, T_0=3)",
    "CosineAnnealingWarmRestarts(learning_rate=0.1, T_0=2, T_mult=2, eta_min=0.01)",
    "LinearWarmup(learning_rate=OneCycleLR(max_learning_rate=0.1, total_steps=10), warmup_steps=3, start_lr=0.0, "
    "end_lr=0.004)",
]


def schedule_values() -> dict:
    """Each SCHEDULES scheduler's learning rate at runs 0..19 (step() after each), until Paddle refuses a step."""
    values = {}
    for spec in SCHEDULES:
        scheduler, rates = eval(spec, vars(paddle.optimizer.lr)), []   # noqa: S307 - our own literal specs
        for _ in range(20):
            rates.append(scheduler())
            try:
                scheduler.step()
            except ValueError:   # OneCycleLR past total_steps
                break
        values[spec] = rates
    return values


def main(out: Path) -> None:
    paddle.seed(18)
    wav = (0.5 * RNG.standard_normal((3, SAMPLES))).astype(np.float32)
    spotter = KeywordSpotter()
    with paddle.no_grad():   # running statistics away from 0 and 1, so test mode's batch norm is checked
        spotter.net.conv.batch_norm._mean.set_value(paddle.to_tensor(RNG.normal(0, 0.5, 16).astype(np.float32)))
        spotter.net.conv.batch_norm._variance.set_value(paddle.to_tensor(RNG.uniform(0.5, 2, 16).astype(np.float32)))
    (probabilities,) = save(spotter, out / "kws_pir", wav)
    waveform, magnitude = save(RoundTrip(), out / "istft_pir", wav)
    meta = fine_tune(spotter, dict(np.load(out / "kws_data.npz")))
    tuned = spotter(paddle.to_tensor(wav)).numpy()
    np.savez_compressed(out / "pir.npz", wav=wav, probabilities=probabilities, waveform=waveform,
                        magnitude=magnitude, tuned=tuned)
    meta.update(vocoder_pir(out, np.load(out / "vocoder_data.npz")["target"]))
    fft_cases(out)
    print(json.dumps({**meta, "schedules": schedule_values()}))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
