"""PARL's learn steps as legacy static programs (tools/parl_static.py): each algorithm of parl/algorithms/paddle/ with
its example's model, and the static meaning of the four dygraph calls they make (see that tool's docstring)."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


@dataclass
class LearnStep:
    feed: dict
    forward: object = None
    minimized: list = field(default_factory=list)   # (loss, optimizer settings, parameter names), in order
    updates: list = field(default_factory=list)     # (target, weight, decay) soft updates, in order
    synced: list = field(default_factory=list)      # (target, weight) each target network starts as
    fetch: list = field(default_factory=list)       # a sampling step's outputs (its actions, their log-probabilities)


def _import_parl(source: Path):
    os.environ["PARL_BACKEND"] = "paddle"   # parl's own check imports paddle.fluid, which 3.3.1 has not
    sys.modules["parl.remote"] = types.SimpleNamespace(remote_class=None, connect=None)   # xparl's cluster (gRPC)
    sys.path.insert(0, str(source))
    import parl
    return parl


def _example(source: Path, path: str, width: int | None = None):
    """An example's model module (several examples name theirs mujoco_model.py); with ``width``, its 256-wide
    hidden layers and convolutions that wide (a fixture's size)."""
    import paddle
    spec = importlib.util.spec_from_file_location(path.replace("/", "_")[:-3], source / "examples" / path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if width is not None:
        narrow = lambda size: width if size == 256 else size   # noqa: E731
        module.nn = types.SimpleNamespace(
            Linear=lambda in_features, out_features, **attrs: paddle.nn.Linear(
                narrow(in_features), narrow(out_features), **attrs),
            Conv2D=lambda in_channels, out_channels, **attrs: paddle.nn.Conv2D(in_channels, narrow(out_channels),
                                                                              **attrs),
            Flatten=paddle.nn.Flatten)
    return module


def _optimizer_settings(optimizer) -> dict:
    clip = optimizer._grad_clip
    settings = {"type": type(optimizer).__name__.lower(), "learning_rate": float(optimizer._learning_rate)}
    if settings["type"] == "adam":
        settings.update(beta1=optimizer._beta1, beta2=optimizer._beta2, epsilon=optimizer._epsilon)
    if settings["type"] == "rmsprop":
        settings.update(rho=optimizer._rho, epsilon=optimizer._epsilon, momentum=optimizer._momentum,
                        centered=optimizer._centered)
    if clip is not None:
        settings["clip"] = [type(clip).__name__, float(clip.clip_norm)]
    return settings


def _install(parl, step: LearnStep, main, deferred: bool) -> list:
    """The static meaning of backward/step, no_grad, deepcopy and sync_weights_to; returns the deferred work (every
    backward, then every update, then the soft updates)."""
    import paddle
    from paddle.base.framework import Variable
    pending, backwards, applies, syncs = [], [], [], []

    def record(optimizer, loss):
        step.minimized.append((loss.name, _optimizer_settings(optimizer), [p.name for p in optimizer._parameter_list]))

    def backward_then_apply(optimizer, loss):
        record(optimizer, loss)
        grads = []
        backwards.append(lambda: grads.extend(optimizer.backward(loss)))
        applies.append(lambda: optimizer.apply_gradients(grads))

    def optimizer_step(optimizer):
        loss = pending.pop()
        if deferred:   # every backward before any update: each reads the weights its forward read
            backward_then_apply(optimizer, loss)
        else:
            record(optimizer, loss)
            optimizer.minimize(loss)

    Variable.backward = lambda self, *_, **__: pending.append(self)
    classes = [paddle.optimizer.Optimizer]
    for kind in classes:   # Adam has a step of its own
        classes.extend(kind.__subclasses__())
        kind.step = optimizer_step
        kind.clear_grad = lambda self, *_, **__: None
        kind.set_lr = lambda self, value: None   # the examples' rate is the one each was made with

    @contextlib.contextmanager
    def no_grad():
        block = main.current_block()
        start = len(block.ops)
        yield
        for op in block.ops[start:]:
            for name in op.output_arg_names:
                block.var(name).stop_gradient = True

    paddle.no_grad = no_grad

    def sync_weights_to(model, target, decay=0.0):
        targets = dict(target.named_parameters())
        pairs = [(targets[name], weight) for name, weight in model.named_parameters()]
        if decay == 0.0:   # the agents' first sync: the target starts as the model (in the scope, before step 1)
            step.synced.extend((t.name, w.name) for t, w in pairs)
            return

        def append():
            for target_weight, weight in pairs:
                step.updates.append((target_weight.name, weight.name, decay))
                paddle.assign(decay * target_weight + (1 - decay) * weight, target_weight)
        syncs.append(append) if deferred else append()

    parl.Model.sync_weights_to = sync_weights_to
    twin = lambda model: model._parl_static_twin()   # noqa: E731 - a target network: the model's class again
    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("parl.algorithms.paddle."):
            if hasattr(module, "deepcopy"):
                module.deepcopy = twin
            if hasattr(module, "copy"):
                module.copy = types.SimpleNamespace(deepcopy=twin)
    return lambda: [work() for work in [*backwards, *applies, *syncs]]


def _model(factory):
    model = factory()
    model._parl_static_twin = factory
    return model


def _data(feed: dict, name: str, value: np.ndarray):
    import paddle
    feed[name] = value
    return paddle.static.data(name, value.shape, str(value.dtype))


def _transition_batch(rng, feed, batch, obs, action):
    return [_data(feed, "obs", rng.standard_normal((batch, obs)).astype("float32")), _data(feed, "action", action),
            _data(feed, "reward", rng.standard_normal((batch, 1)).astype("float32")),
            _data(feed, "next_obs", rng.standard_normal((batch, obs)).astype("float32")),
            _data(feed, "terminal", (rng.random((batch, 1)) < 0.25).astype("float32"))]


def build_learn_step(source: Path, algo: str, main, batch: int, obs: int, act: int,
                     deferred: bool = False) -> LearnStep:
    """Build ``algo``'s learn step in ``main`` (under its program_guard); ``<algo>_sample``: its sample step."""
    import paddle
    parl = _import_parl(source)
    from parl import algorithms
    rng, feed = np.random.default_rng(0), {}
    step = LearnStep(feed)
    later = _install(parl, step, main, deferred)
    algo, sampling = algo.removesuffix("_sample"), algo.endswith("_sample")
    if algo in ("dqn", "ddqn"):
        net = _example(source, "DQN/cartpole_model.py").CartpoleModel
        alg = (algorithms.DQN if algo == "dqn" else algorithms.DDQN)(_model(lambda: net(obs, act)), 0.99, 5e-4)
        inputs = _transition_batch(rng, feed, batch, obs, rng.integers(0, act, (batch, 1)).astype("int64"))
    elif algo == "pg":
        net = _example(source, "QuickStart/cartpole_model.py").CartpoleModel
        alg = algorithms.PolicyGradient(_model(lambda: net(obs, act)), lr=1e-3)
        inputs = [_data(feed, "obs", rng.standard_normal((batch, obs)).astype("float32")),
                  _data(feed, "action", rng.integers(0, act, (batch, 1)).astype("int64")),
                  _data(feed, "reward", rng.standard_normal((batch, 1)).astype("float32"))]
    elif algo == "a2c":
        net = _example(source, "A2C/atari_model.py").AtariModel
        alg = algorithms.A2C(_model(lambda: net(act)), vf_loss_coeff=0.5)
        inputs = [_data(feed, "obs", rng.integers(0, 256, (batch, 4, 84, 84)).astype("float32")),
                  _data(feed, "actions", rng.integers(0, act, (batch,)).astype("int64")),
                  _data(feed, "advantages", rng.standard_normal(batch).astype("float32")),
                  _data(feed, "target_values", rng.standard_normal(batch).astype("float32")), 0.001, -0.01]
    elif algo in ("ppo", "ppo_atari"):
        atari = algo == "ppo_atari"
        module = _example(source, "PPO/atari_model.py" if atari else "PPO/mujoco_model.py")
        spaces = (types.SimpleNamespace(shape=(4, 84, 84)), types.SimpleNamespace(n=act)) if atari else \
            (types.SimpleNamespace(shape=(obs,)), types.SimpleNamespace(shape=(act,)))
        net = module.AtariModel if atari else module.MujocoModel
        alg = algorithms.PPO(_model(lambda: net(*spaces)), clip_param=0.2, continuous_action=not atari)
        observations = rng.integers(0, 256, (batch, 4, 84, 84)).astype("float32") if atari else \
            rng.standard_normal((batch, obs)).astype("float32")
        actions = rng.integers(0, act, (batch,)).astype("int64") if atari else \
            rng.standard_normal((batch, act)).astype("float32")
        inputs = [_data(feed, "obs", observations), _data(feed, "action", actions)] + \
            [_data(feed, name, rng.standard_normal(batch).astype("float32") * (0.1 if name == "logprob" else 1))
             for name in ("value", "return", "logprob", "adv")]
    elif algo in ("ddpg", "td3", "sac", "cql", "sac_w8"):
        folder = {"ddpg": "DDPG", "td3": "TD3", "sac": "SAC", "cql": "CQL", "sac_w8": "SAC"}[algo]
        net = _example(source, f"{folder}/mujoco_model.py", 8 if algo == "sac_w8" else None).MujocoModel
        model = _model(lambda: net(obs, act))
        if algo == "ddpg":
            alg = algorithms.DDPG(model, gamma=0.99, tau=0.005, actor_lr=1e-3, critic_lr=1e-3)
        elif algo == "td3":
            alg = algorithms.TD3(model, gamma=0.99, tau=0.005, actor_lr=3e-4, critic_lr=3e-4, policy_freq=1)
        elif algo in ("sac", "sac_w8"):
            alg = algorithms.SAC(model, gamma=0.99, tau=0.005, alpha=0.2, actor_lr=3e-4, critic_lr=3e-4)
        else:   # its temperature's log a parameter (a dygraph tensor with a gradient in PARL), as it starts: 0
            alg = algorithms.CQL(model, gamma=0.99, tau=0.005, actor_lr=1e-4, critic_lr=3e-4, policy_eval_start=0,
                                 with_automatic_entropy_tuning=False)
            alg.with_automatic_entropy_tuning, alg.target_entropy = True, None
            alg.log_alpha = paddle.static.create_parameter([1], "float32", "log_alpha",
                                                           default_initializer=paddle.nn.initializer.Constant(0.0))
            alg.alpha_optimizer = paddle.optimizer.Adam(learning_rate=1e-4, parameters=[alg.log_alpha])
        inputs = _transition_batch(rng, feed, batch, obs, rng.uniform(-1, 1, (batch, act)).astype("float32"))
    elif algo == "qmix":   # the example's config: 3 agents, 5 actions, episodes of 4 steps, clipped gradients
        agents, actions, steps, state = 3, 5, 4, 10
        agent_net = _example(source, "QMIX/rnn_model.py").RNNModel
        mixer_net = _example(source, "QMIX/qmixer_model.py").QMixerModel
        alg = algorithms.QMIX(_model(lambda: agent_net(obs, actions)), _model(lambda: mixer_net(agents, state)),
                              double_q=True, gamma=0.99, lr=5e-4, clip_grad_norm=10.0)
        available = (rng.random((batch, steps, agents, actions)) < 0.8).astype("float32")
        available[..., 0] = 1
        inputs = [_data(feed, "state", rng.standard_normal((batch, steps, state)).astype("float32")),
                  _data(feed, "actions", rng.integers(0, actions, (batch, steps, agents)).astype("int64")),
                  _data(feed, "reward", rng.standard_normal((batch, steps, 1)).astype("float32")),
                  _data(feed, "terminated", (rng.random((batch, steps, 1)) < 0.2).astype("float32")),
                  _data(feed, "obs", rng.standard_normal((batch, steps, agents, obs)).astype("float32")),
                  _data(feed, "available", available),
                  _data(feed, "filled", np.zeros((batch, steps, 1), "float32"))]
    elif algo == "maddpg":
        net = _example(source, "MADDPG/simple_model.py").MAModel
        agents = 2
        space = [types.SimpleNamespace(n=act)] * agents
        model = _model(lambda: net(obs, act, (obs + act) * agents, continuous_actions=False))
        alg = algorithms.MADDPG(model, agent_index=0, act_space=space, gamma=0.95, tau=0.01, actor_lr=1e-2,
                                critic_lr=1e-2)
        inputs = [[_data(feed, f"obs{i}", rng.standard_normal((batch, obs)).astype("float32")) for i in range(agents)],
                  [_data(feed, f"act{i}", rng.dirichlet(np.ones(act), batch).astype("float32"))
                   for i in range(agents)],
                  _data(feed, "target_q", rng.standard_normal(batch).astype("float32"))]
    elif algo in ("impala", "impala_w8"):   # the example's Atari net on its 42 x 42 frames; 2 rollouts of 5 steps
        rollouts, steps = 2, 5
        net = _example(source, "IMPALA/atari_model.py", 8 if algo == "impala_w8" else None).AtariModel
        alg = algorithms.IMPALA(_model(lambda: net(act)), sample_batch_steps=steps, gamma=0.99, vf_loss_coeff=0.5,
                                clip_rho_threshold=1.0, clip_pg_rho_threshold=1.0)
        count = rollouts * steps
        inputs = [_data(feed, "obs", rng.integers(0, 256, (count, 4, 42, 42)).astype("float32")),
                  _data(feed, "actions", rng.integers(0, act, (count,)).astype("int64")),
                  _data(feed, "behaviour_logits", rng.standard_normal((count, act)).astype("float32")),
                  _data(feed, "rewards", rng.standard_normal(count).astype("float32")),
                  _data(feed, "dones", rng.random(count) < 0.2), 0.001, -0.01]
    else:
        raise SystemExit(f"unknown algorithm {algo}")
    if sampling:   # the agent's exploration: actions drawn from the policy's distribution
        observation = inputs[0][0] if algo == "maddpg" else inputs[0]
        outputs = alg.sample(observation)
        step.fetch = [out.name for out in (outputs if isinstance(outputs, (list, tuple)) else [outputs])]
    elif algo == "qmix":   # its learn ends in float(loss), a dygraph value: the error after its step is ignored
        with contextlib.suppress(TypeError):
            alg.learn(*inputs)
    else:
        alg.learn(*inputs)
    step.forward = main.clone()
    later()
    return step


def gradc_clip(clip):
    """gradc's gradient clip of Paddle's (its class name and clip_norm, as recorded)."""
    from gradc.optimizers import clip as clips
    return clip and getattr(clips, clip[0])(clip[1])


def append_soft_updates(program, updates: list) -> None:
    """Each target weight assigned decay * itself + (1 - decay) * the weight, after the updates (gradc's ops)."""
    from gradc.ir import roles
    from gradc.optimizers.emit import Emitter
    emit = Emitter(program)
    for target, weight, decay in updates:
        kept, taken, mixed = (emit.like(f"{target}.soft_{{}}", target) for _ in range(3))
        emit.scale(target, kept, decay, roles.FORWARD, [])
        emit.scale(weight, taken, 1 - decay, roles.FORWARD, [])
        emit.op("elementwise_add", {"X": [kept], "Y": [taken]}, {"Out": [mixed]}, {"axis": -1}, roles.FORWARD, [])
        emit.op("assign", {"X": [mixed]}, {"Out": [target]}, {}, roles.FORWARD, [])
