"""Optional inputs of gradc.ops.optimizer_amp and optimizer_extra: update_loss_scaling's StopUpdate (the tensor
wins over stop_update: the scale and the counters stay, the gradients of a bad step are still zeroed),
sparse_momentum's Axis (wins over axis), and the master weights of asgd and sparse_momentum (the update runs on
the float32 master, ParamOut is its float16 cast; see slot_cases.optimizer)."""

import numpy as np

from gradc.executor.kernels import optimizer_math as M

from . import SlotCase
from .optimizer import LR, M1, G, V, master_case

N = np.array([2.0], "float32")


def asgd(param, grad):
    d = V - M1 + grad
    return param - LR / N * d, d, grad


SPARSE_PARAM = np.arange(9, dtype="float32").reshape(3, 3) / 10
SPARSE_GRAD = np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]], "float32") / 10
SPARSE_INDEX = np.array([2, 0, 0], "int64")
SPARSE_VELOCITY = np.full((3, 3), 0.5, "float32")


def sparse_momentum_along_columns():
    """Axis 1: column 2 of the scattered gradient is Grad's column 0, column 0 the sum of its columns 1 and 2."""
    scattered = np.zeros((3, 3), "float32")
    scattered[:, 2] = SPARSE_GRAD[:, 0]
    scattered[:, 0] = SPARSE_GRAD[:, 1] + SPARSE_GRAD[:, 2]
    velocity = SPARSE_VELOCITY * np.float32(0.9) + scattered
    return {"ParamOut": SPARSE_PARAM - velocity * LR[0], "VelocityOut": velocity}


CASES = [
    SlotCase("update_loss_scaling", "StopUpdate",
             {"X": [G], "FoundInfinite": np.array([True]), "PrevLossScaling": np.array([8.0], "float32"),
              "InGoodSteps": np.array([3], "int32"), "InBadSteps": np.array([0], "int32"),
              "StopUpdate": np.array([True])},
             {"Out": [np.zeros_like(G)], "LossScaling": np.array([8.0], "float32"),
              "OutGoodSteps": np.array([3], "int32"), "OutBadSteps": np.array([0], "int32")},
             {"decr_every_n_nan_or_inf": 1, "decr_ratio": 0.5}),
    SlotCase("sparse_momentum", "Axis",
             {"Param": SPARSE_PARAM, "Grad": SPARSE_GRAD, "Velocity": SPARSE_VELOCITY, "Index": SPARSE_INDEX,
              "LearningRate": LR, "Axis": np.array([1], "int32")},
             sparse_momentum_along_columns(), {"mu": 0.9, "axis": 0}),
    master_case("asgd", {"learning_rate": LR, "d": V, "y": M1, "n": N}, {}, asgd, ["param_out", "d_out", "y_out"],
                names=("param", "grad", "master_param")),
    # Index names each row once, in order: the scattered gradient is Grad, and the step plain momentum's
    master_case("sparse_momentum", {"Velocity": V, "Index": np.array([0, 1], "int64"), "LearningRate": LR},
                {"mu": 0.9}, lambda p, g: M.momentum(p, g, V, LR, 0.9), ["ParamOut", "VelocityOut"]),
]
