"""The reinforcement-learning engineer's programs of docs/tools.md's 'A reinforcement-learning engineer's week', built
by Paddle 3.3.1's static API and trained by Paddle's executor:

- dqn: a Double-DQN learn step in legacy mode: online and target Q-networks (q.*, target_q.*), the taken action's Q
  by index_sample, the online net's greedy next action (argmax) read from the target net by take_along_axis, a
  detached TD target, smooth L1 loss, Adam(0.01); STEPS replay batches, the target synced (the online parameters
  copied in the scope) every SYNC_EVERY steps; PARL's soft sync as a program of its own, run once; the online
  Q-network saved by save_inference_model and run by Paddle's Predictor.
- ppo: a PPO-clip actor-critic in legacy mode: categorical log-prob by log_softmax and take_along_axis, the ratio
  exp(logp - logp_old) clipped and the minimum taken, the advantage returns - value detached and normalised, a value
  head (MSE), an entropy bonus, Adam(0.01) with ClipGradByGlobalNorm(0.5); 2 epochs over the rollout in minibatches.
- ppo_pir: the same PPO program built in PIR mode (Paddle 3's default), its minimize program and startup program
  saved as PIR JSON, with Paddle's initial parameters and losses; the trained actor saved by save_inference_model
  (PIR) and run by Paddle's Predictor.
- gauss_pir: a Gaussian policy (mean head, state-independent log_std parameter, tanh squashing with its log-det
  correction), its policy-gradient loss trained by Adam in PIR mode; and the deterministic policy tanh(mean) saved by
  paddle.jit.save (model.json), with its outputs from Paddle's Predictor.

Writes dqn.pb, ppo_pir.json, gauss_pir.json (Paddle's training programs), dqn_forward.pb / ppo_forward.pb (before
minimize), <case>_startup.pb / .json, dqn_init.npz and <case>_pir_init.npz (Paddle's initial parameters),
replay.npz / rollout.npz / gauss.npz (the data, in Paddle's order), dqn_soft_sync.pb and dqn_synced.npz (every
parameter after it), policy_obs.npz, dqn_predictor.npz, ppo_predictor.npz, gauss_policy.json / .pdiparams and
gauss_predictor.npz, and meta.json (Paddle's executor's losses per step, the vars' names).

    FLAGS_enable_pir_api=0 /path/to/paddle/python tools/paddle_user_week16.py tests/data/paddle/user_week16
"""

import json
import tempfile
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
import paddle_legacy_shim
from paddle import nn
from paddle_programs import pir_half, predict, script_main, without_callstacks

RNG = np.random.default_rng(16)
OBS, ACTIONS, HIDDEN, BATCH = 4, 3, 16, 8
STEPS, SYNC_EVERY, GAMMA = 6, 3, 0.9
ROLLOUT, EPOCHS, CLIP = 32, 2, 0.2


class QNet(nn.Layer):
    """obs -> relu(fc) -> relu(fc) -> Q per action; its parameters named <prefix>.fc<i>.w / .b."""

    def __init__(self, prefix: str):
        super().__init__()
        self.layers = nn.LayerList([
            nn.Linear(width_in, width_out, weight_attr=paddle.ParamAttr(name=f"{prefix}.fc{i}.w"),
                      bias_attr=paddle.ParamAttr(name=f"{prefix}.fc{i}.b"))
            for i, (width_in, width_out) in enumerate(((OBS, HIDDEN), (HIDDEN, HIDDEN), (HIDDEN, ACTIONS)))])

    def forward(self, obs):
        for layer in self.layers[:-1]:
            obs = F.relu(layer(obs))
        return self.layers[-1](obs)


def replay() -> dict:
    """STEPS batches of transitions, as a replay buffer samples them (actions from an epsilon-greedy policy)."""
    size = STEPS * BATCH
    return {"obs": RNG.standard_normal((size, OBS)).astype(np.float32),
            "action": RNG.integers(0, ACTIONS, (size, 1)).astype(np.int64),
            "reward": RNG.standard_normal((size, 1)).astype(np.float32),
            "next_obs": RNG.standard_normal((size, OBS)).astype(np.float32),
            "done": (RNG.random((size, 1)) < 0.2).astype(np.float32)}


def dqn(main, startup):
    with paddle.static.program_guard(main, startup):
        obs = paddle.static.data("obs", [-1, OBS], "float32")
        action = paddle.static.data("action", [-1, 1], "int64")
        reward = paddle.static.data("reward", [-1, 1], "float32")
        next_obs = paddle.static.data("next_obs", [-1, OBS], "float32")
        done = paddle.static.data("done", [-1, 1], "float32")
        online, target_net = QNet("q"), QNet("target_q")
        q = online(obs)
        q_taken = paddle.index_sample(q, action)
        greedy = paddle.unsqueeze(paddle.argmax(online(next_obs), axis=1), 1)
        next_q = paddle.take_along_axis(target_net(next_obs), greedy, axis=1)
        target = reward + GAMMA * (1.0 - done) * next_q
        target.stop_gradient = True
        loss = F.smooth_l1_loss(q_taken, target)
        forward = main.clone()
        paddle.optimizer.Adam(0.01).minimize(loss)
    return q, loss, forward


def soft_sync(main, decay: float = 0.9):
    """PARL's sync_weights_to(decay=0.9) as a program of its own: target = decay * target + (1 - decay) * online,
    assigned into each target parameter."""
    program = paddle.static.Program()
    with paddle.static.program_guard(program, paddle.static.Program()):
        block = program.global_block()
        for param in main.all_parameters():
            if param.name.startswith("q."):
                online, target = (block.create_var(name=name, shape=param.shape, dtype=param.dtype, persistable=True)
                                  for name in (param.name, "target_" + param.name))
                paddle.assign(paddle.scale(target, decay) + paddle.scale(online, 1 - decay), output=target)
    return program


def rollout() -> dict:
    return {"obs": RNG.standard_normal((ROLLOUT, OBS)).astype(np.float32),
            "action": RNG.integers(0, ACTIONS, (ROLLOUT, 1)).astype(np.int64),
            "logp_old": np.log(RNG.uniform(0.2, 0.5, (ROLLOUT, 1))).astype(np.float32),
            "returns": RNG.standard_normal((ROLLOUT, 1)).astype(np.float32)}


def mlp(width_out: int, prefix: str):
    return nn.Sequential(
        nn.Linear(OBS, HIDDEN, weight_attr=paddle.ParamAttr(name=f"{prefix}.fc0.w"),
                  bias_attr=paddle.ParamAttr(name=f"{prefix}.fc0.b")), nn.Tanh(),
        nn.Linear(HIDDEN, width_out, weight_attr=paddle.ParamAttr(name=f"{prefix}.fc1.w"),
                  bias_attr=paddle.ParamAttr(name=f"{prefix}.fc1.b")))


def ppo(main, startup):
    with paddle.static.program_guard(main, startup):
        obs = paddle.static.data("obs", [-1, OBS], "float32")
        action = paddle.static.data("action", [-1, 1], "int64")
        logp_old = paddle.static.data("logp_old", [-1, 1], "float32")
        returns = paddle.static.data("returns", [-1, 1], "float32")
        logits, value = mlp(ACTIONS, "actor")(obs), mlp(1, "critic")(obs)
        logp_all = F.log_softmax(logits, axis=-1)
        logp = paddle.take_along_axis(logp_all, action, axis=1)
        advantage = (returns - value).detach()
        centred = advantage - paddle.mean(advantage)
        advantage = centred / (paddle.sqrt(paddle.mean(centred * centred)) + 1e-8)
        ratio = paddle.exp(logp - logp_old)
        surrogate = paddle.minimum(ratio * advantage, paddle.clip(ratio, 1 - CLIP, 1 + CLIP) * advantage)
        entropy = -paddle.mean(paddle.sum(F.softmax(logits, axis=-1) * logp_all, axis=1))
        loss = -paddle.mean(surrogate) + 0.5 * F.mse_loss(value, returns) - 0.01 * entropy
        forward = main.clone()
        paddle.optimizer.Adam(0.01, grad_clip=nn.ClipGradByGlobalNorm(0.5)).minimize(loss)
    return logits, loss, forward, obs


def gauss_batch() -> dict:
    return {"obs": RNG.standard_normal((ROLLOUT, OBS)).astype(np.float32),
            "action": RNG.uniform(-0.95, 0.95, (ROLLOUT, 2)).astype(np.float32),
            "advantage": RNG.standard_normal((ROLLOUT, 1)).astype(np.float32)}


class Gaussian(nn.Layer):
    """A squashed Gaussian policy: mean from an MLP, a log_std parameter per action dim."""

    def __init__(self):
        super().__init__()
        self.mean = nn.Sequential(nn.Linear(OBS, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, 2))
        self.log_std = self.create_parameter([2], default_initializer=nn.initializer.Constant(-0.5))

    def forward(self, obs):
        return paddle.tanh(self.mean(obs))


def gauss_loss(policy, obs, action, advantage):
    """-mean(log pi(a|s) * A): the squashed action's pre-tanh value atanh(a), the Normal's log density, and the
    tanh's log-det correction log(1 - a^2 + 1e-6)."""
    raw = 0.5 * paddle.log((1 + action) / (1 - action))
    mean, log_std = policy.mean(obs), policy.log_std
    density = -0.5 * ((raw - mean) / paddle.exp(log_std)) ** 2 - log_std - 0.5 * float(np.log(2 * np.pi))
    logp = paddle.sum(density - paddle.log(1 - action * action + 1e-6), axis=1, keepdim=True)
    return -paddle.mean(logp * advantage)


def run_steps(exe, program, batches, loss, after_step=lambda step: None) -> list[float]:
    losses = []
    for step, feed in enumerate(batches, 1):
        losses.append(float(exe.run(program, feed=feed, fetch_list=[loss])[0]))
        after_step(step)
    return losses


def minibatches(data: dict, size: int, epochs: int) -> list[dict]:
    count = len(next(iter(data.values())))
    return [{k: v[i:i + size] for k, v in data.items()} for _ in range(epochs) for i in range(0, count, size)]


def initial(scope, program) -> dict:
    return {p.name: np.array(scope.find_var(p.name).get_tensor()) for p in program.global_block().all_parameters()}


def legacy_cases(out: Path, meta: dict) -> None:
    exe, scope = paddle.static.Executor(paddle.CPUPlace()), paddle.static.global_scope()
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 16
    q, loss, forward = dqn(main, startup)
    exe.run(startup)
    np.savez(out / "dqn_init.npz", **initial(scope, main))
    buffer = replay()
    np.savez_compressed(out / "replay.npz", **buffer)

    def sync(step):
        if step % SYNC_EVERY == 0:
            for param in main.all_parameters():
                if param.name.startswith("q."):
                    value = np.array(scope.find_var(param.name).get_tensor())
                    scope.find_var("target_" + param.name).get_tensor().set(value, paddle.CPUPlace())

    meta["dqn"] = {"loss": loss.name, "q": q.name,
                   "losses": run_steps(exe, main, minibatches(buffer, BATCH, 1), loss, sync)}
    soft = soft_sync(main)
    exe.run(soft)
    np.savez(out / "dqn_synced.npz", **{name: np.array(scope.find_var(name).get_tensor())
                                        for name in sorted(initial(scope, main))})
    (out / "dqn_soft_sync.pb").write_bytes(without_callstacks(soft))
    (out / "dqn.pb").write_bytes(without_callstacks(main))
    (out / "dqn_forward.pb").write_bytes(without_callstacks(forward))
    (out / "dqn_startup.pb").write_bytes(without_callstacks(startup))
    policy_obs = {"obs": RNG.standard_normal((5, OBS)).astype(np.float32)}
    np.savez(out / "policy_obs.npz", **policy_obs)
    with tempfile.TemporaryDirectory() as saved:
        test = main.clone(for_test=True)
        paddle.static.save_inference_model(f"{saved}/q", [test.global_block().var("obs")],
                                           [test.global_block().var(q.name)], exe, program=test)
        np.savez(out / "dqn_predictor.npz", **predict(f"{saved}/q.pdmodel", f"{saved}/q.pdiparams", policy_obs))
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 16
    logits, loss, forward, _ = ppo(main, startup)
    exe.run(startup)
    data = rollout()
    np.savez_compressed(out / "rollout.npz", **data)
    meta["ppo"] = {"loss": loss.name, "logits": logits.name,
                   "losses": run_steps(exe, main, minibatches(data, BATCH, EPOCHS), loss)}
    (out / "ppo_forward.pb").write_bytes(without_callstacks(forward))
    (out / "ppo_startup.pb").write_bytes(without_callstacks(startup))


def pir_cases(out: Path, meta: dict) -> None:
    serialize = paddle.base.core.serialize_pir_program
    paddle.seed(16)
    exe, scope = paddle.static.Executor(paddle.CPUPlace()), paddle.static.global_scope()
    main, startup = paddle.static.Program(), paddle.static.Program()
    logits, loss, _, obs = ppo(main, startup)
    exe.run(startup)
    np.savez(out / "ppo_pir_init.npz", **initial(scope, main))
    data = dict(np.load(out / "rollout.npz"))
    meta["ppo_pir"] = {"losses": run_steps(exe, main, minibatches(data, BATCH, EPOCHS), loss)}
    serialize(main, str(out / "ppo_pir.json"), True, False, True)
    serialize(startup, str(out / "ppo_pir_startup.json"), True, False, True)
    with tempfile.TemporaryDirectory() as saved:   # the trained actor, as Paddle 3 saves it for inference
        paddle.static.save_inference_model(f"{saved}/actor", [obs], [logits], exe, program=main)
        np.savez(out / "ppo_predictor.npz", **predict(f"{saved}/actor.json", f"{saved}/actor.pdiparams",
                                                      dict(np.load(out / "policy_obs.npz"))))
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        paddle.seed(16)
        policy = Gaussian()
        obs = paddle.static.data("obs", [-1, OBS], "float32")
        action = paddle.static.data("action", [-1, 2], "float32")
        advantage = paddle.static.data("advantage", [-1, 1], "float32")
        loss = gauss_loss(policy, obs, action, advantage)
        paddle.optimizer.Adam(0.01).minimize(loss)
    exe.run(startup)
    np.savez(out / "gauss_pir_init.npz", **initial(scope, main))
    data = gauss_batch()
    np.savez_compressed(out / "gauss.npz", **data)
    meta["gauss_pir"] = {"losses": run_steps(exe, main, minibatches(data, BATCH, 1), loss)}
    serialize(main, str(out / "gauss_pir.json"), True, False, True)
    serialize(startup, str(out / "gauss_pir_startup.json"), True, False, True)
    paddle.disable_static()
    paddle.seed(16)
    policy = Gaussian()
    policy.eval()
    with tempfile.TemporaryDirectory() as saved:
        paddle.jit.save(policy, f"{saved}/gauss_policy",
                        input_spec=[paddle.static.InputSpec([-1, OBS], "float32", "obs")])
        for suffix in ("json", "pdiparams"):
            (out / f"gauss_policy.{suffix}").write_bytes(Path(f"{saved}/gauss_policy.{suffix}").read_bytes())
        feed = dict(np.load(out / "policy_obs.npz"))
        np.savez(out / "gauss_predictor.npz", **predict(f"{saved}/gauss_policy.json",
                                                        f"{saved}/gauss_policy.pdiparams", feed))
    paddle.enable_static()


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    meta = {}
    paddle_legacy_shim.install()   # the C-only APIs (paddle.sum, exp, ...) build only PIR ops in 3.3.1
    paddle.enable_static()
    legacy_cases(out, meta)
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    pir_half(__file__, out)


def main_pir(out: Path) -> None:
    meta = json.loads((out / "meta.json").read_text())
    paddle.enable_static()
    pir_cases(out, meta)
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


if __name__ == "__main__":
    script_main(main, main_pir)
