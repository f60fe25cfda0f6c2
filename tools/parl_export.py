"""Export the policy and value networks of PARL's examples as Paddle 3 saves them (inference.json + inference.pdiparams,
PIR), with their initial weights (seed 0), for tools/real_models.py to check gradc against Paddle on. Needs
paddlepaddle 3.3.1 and a PARL checkout with what it imports (termcolor, scipy, six, pyzmq, cloudpickle in DEPS):

    PYTHONPATH=DEPS:tools /path/to/paddle/python tools/parl_export.py PARL_DIR OUT_DIR [MODEL ...]

Each model is its example's class, saved by PARL's own export (parl.Agent.save_inference_model: paddle.jit.save of the
model's forward with an InputSpec per input, the batch free). PPO's and A2C's models have no forward (their agents call
policy and value): a subclass whose forward returns both is saved; an actor-critic's actor and critic are saved
apart, as PARL's docstring shows. One process per model, into OUT_DIR/<model>/; one line each: OK, or FAIL and why.
"""

from __future__ import annotations

from pathlib import Path

from suite_export import main

OBS, ACT, ATARI = 6, 2, [4, 84, 84]
# name: (example module, class, its arguments, part saved: "" the model, else an attribute or "policy+value",
#        the inputs' shapes without the batch)
MODELS = {
    "DQN": ("DQN/cartpole_model.py", "CartpoleModel", (OBS, ACT), "", [[OBS]]),
    "PolicyGradient": ("QuickStart/cartpole_model.py", "CartpoleModel", (OBS, ACT), "", [[OBS]]),
    "A2C": ("A2C/atari_model.py", "AtariModel", (ACT,), "policy+value", [ATARI]),
    "PPO_atari": ("PPO/atari_model.py", "AtariModel", ("atari", ACT), "policy+value", [ATARI]),
    "PPO_mujoco": ("PPO/mujoco_model.py", "MujocoModel", ("mujoco", ACT), "policy+value", [[OBS]]),
    "ES": ("ES/mujoco_model.py", "MujocoModel", (OBS, ACT), "", [[OBS]]),
    **{f"{algo}_{part}": (f"{algo}/mujoco_model.py", "MujocoModel", (OBS, ACT), f"{part}_model",
                          [[OBS]] if part == "actor" else [[OBS], [ACT]])
       for algo in ("DDPG", "TD3", "SAC", "CQL", "OAC") for part in ("actor", "critic")},
    "MADDPG_actor": ("MADDPG/simple_model.py", "MAModel", (OBS, ACT, 2 * (OBS + ACT)), "actor_model", [[OBS]]),
    "QMIX_rnn": ("QMIX/rnn_model.py", "RNNModel", (OBS, ACT), "", [[OBS], [64]]),
    "QMIX_mixer": ("QMIX/qmixer_model.py", "QMixerModel", (3, 10), "", [[1, 3], [1, 10]]),
}
SMALLEST = list(MODELS)


def _policy_and_value(self, obs):
    """The forward of PPO's and A2C's models (Paddle's AST conversion needs a function with its source)."""
    return self.policy(obs), self.value(obs)


def export_one(out: Path, name: str) -> str:
    import os
    import sys
    import types

    import paddle
    os.environ["PARL_BACKEND"] = "paddle"   # parl's own check imports paddle.fluid, which 3.3.1 has not
    sys.modules["parl.remote"] = types.SimpleNamespace(remote_class=None, connect=None)   # xparl (gRPC)
    import parl
    from parl_shim import _example
    path, class_name, arguments, part, shapes = MODELS[name]
    paddle.seed(0)
    cls = getattr(_example(Path.cwd(), path), class_name)
    if arguments[0] in ("atari", "mujoco"):   # PPO's models take gym spaces
        observation = types.SimpleNamespace(shape=ATARI if arguments[0] == "atari" else [OBS])
        arguments = (observation, types.SimpleNamespace(n=ACT, shape=(ACT,)))
    if part == "policy+value":
        cls = type(class_name, (cls,), {"forward": _policy_and_value})
    model = cls(*arguments)
    model = getattr(model, part) if part.endswith("_model") else model
    model.eval()
    parl.Agent.save_inference_model(types.SimpleNamespace(), str(out / name / "inference"),
                                    [[None, *shape] for shape in shapes], ["float32"] * len(shapes), model)
    return "OK"


if __name__ == "__main__":
    main(__file__, export_one, SMALLEST)
