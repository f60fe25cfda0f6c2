"""resnet_unit and resnet_basic_block against central differences (float64). resnet_unit (NHWC, KRSC filters): the
plain unit with a 3x3 filter, the shortcut unit of 1x1 filters (the shortcut's conv2d-shaped [K, C, 1, 1]) with
strides 2, fuse_add, and is_test (frozen statistics); resnet_basic_block (NCHW): with a strided 1x1 shortcut, with
the identity, and is_test. Both grads' second derivatives too (gradc.ops.resnet_fusion_double), in each mode."""

from gradcheck_cases import Case, rng
from gradcheck_cases.second_order import second_order

r = rng(41)


def _branch(suffix: str, x, filters, channels: int = 4) -> dict:
    return {"Z" if suffix else "X": x, f"Filter{suffix or 'X'}": filters,
            f"Scale{suffix or 'X'}": r.uniform(0.5, 1.5, channels), f"Bias{suffix or 'X'}": r.standard_normal(channels),
            f"Mean{suffix or 'X'}": r.standard_normal(channels), f"Var{suffix or 'X'}": r.uniform(0.5, 1.5, channels)}


PLAIN = _branch("", r.standard_normal((2, 4, 4, 3)), r.standard_normal((4, 3, 3, 3)))
SHORTCUT = {**_branch("", r.standard_normal((2, 5, 5, 3)), r.standard_normal((4, 1, 1, 3))),
            **_branch("Z", r.standard_normal((2, 5, 5, 2)), r.standard_normal((4, 2, 1, 1)))}
ADDED = {**PLAIN, "Z": r.standard_normal((2, 4, 4, 4))}
STRIDED = {"stride": 2, "stride_z": 2, "has_shortcut": True}
WRT = ["X", "FilterX", "ScaleX", "BiasX"]
ONE_BRANCH = dict.fromkeys(["Y", "BitMask", "ConvX", "SavedMeanX", "SavedInvstdX", "RunningMeanX", "RunningVarX"], 1)

CASES = [
    Case("resnet_unit", PLAIN, {"padding": 1}, ONE_BRANCH, wrt=WRT),
    Case("resnet_unit", SHORTCUT, STRIDED, wrt=[*WRT, "Z", "FilterZ", "ScaleZ", "BiasZ"]),
    Case("resnet_unit", ADDED, {"padding": 1, "fuse_add": True}, ONE_BRANCH, wrt=[*WRT, "Z"]),
    Case("resnet_unit", PLAIN, {"padding": 1, "is_test": True}, ONE_BRANCH, wrt=WRT),
]
NO_SHORTCUT = dict.fromkeys(["ConvZ", "SavedMeanZ", "SavedInvstdZ", "RunningMeanZ", "RunningVarZ"], 0)
CASES += [
    second_order("resnet_unit", PLAIN, {"padding": 1}, NO_SHORTCUT, wrt=WRT),
    second_order("resnet_unit", SHORTCUT, STRIDED, wrt=[*WRT, "Z", "FilterZ", "ScaleZ", "BiasZ"]),
    second_order("resnet_unit", ADDED, {"padding": 1, "fuse_add": True}, NO_SHORTCUT, wrt=[*WRT, "Z"]),
    second_order("resnet_unit", PLAIN, {"padding": 1, "is_test": True}, NO_SHORTCUT, wrt=WRT),
]


def _basic(shortcut: bool, channels: int = 3) -> dict:
    inputs = {"X": r.standard_normal((2, 2, 5, 5)), "Filter1": r.standard_normal((channels, 2, 3, 3)),
              "Filter2": r.standard_normal((channels, channels, 3, 3))}
    branches = "123" if shortcut else "12"
    if shortcut:
        inputs["Filter3"] = r.standard_normal((channels, 2, 1, 1))
    for b in branches:
        inputs |= {f"Scale{b}": r.uniform(0.5, 1.5, channels), f"Bias{b}": r.standard_normal(channels),
                   f"Mean{b}": r.standard_normal(channels), f"Var{b}": r.uniform(0.5, 1.5, channels)}
    return inputs


BASIC_WRT = ["X", "Filter1", "Scale1", "Bias1", "Filter2", "Scale2", "Bias2"]
BASIC_OUT = dict.fromkeys(["Y", "Conv1", "SavedMean1", "SavedInvstd1", "Mean1Out", "Var1Out", "Conv2", "Conv2Input",
                           "SavedMean2", "SavedInvstd2", "Mean2Out", "Var2Out", "MaxInput1", "MaxFilter1", "MaxInput2",
                           "MaxFilter2"], 1)
SHORTCUT_BLOCK = {"stride1": 2, "padding1": 1, "padding2": 1, "stride3": 2, "has_shortcut": True}
CASES += [
    Case("resnet_basic_block", _basic(True), SHORTCUT_BLOCK, wrt=[*BASIC_WRT, "Filter3", "Scale3", "Bias3"]),
    Case("resnet_basic_block", _basic(False, 2), {"padding1": 1, "padding2": 1}, BASIC_OUT, wrt=BASIC_WRT),
    Case("resnet_basic_block", _basic(False, 2), {"padding1": 1, "padding2": 1, "is_test": True}, BASIC_OUT,
         wrt=BASIC_WRT),
]
NO_BRANCH3 = dict.fromkeys(["Conv3", "SavedMean3", "SavedInvstd3", "Mean3Out", "Var3Out", "MaxInput3",
                            "MaxFilter3"], 0)
CASES += [
    second_order("resnet_basic_block", _basic(True), SHORTCUT_BLOCK, wrt=[*BASIC_WRT, "Filter3", "Scale3", "Bias3"]),
    second_order("resnet_basic_block", _basic(False, 2), {"padding1": 1, "padding2": 1}, NO_BRANCH3, wrt=BASIC_WRT),
    second_order("resnet_basic_block", _basic(False, 2), {"padding1": 1, "padding2": 1, "is_test": True},
                 NO_BRANCH3, wrt=BASIC_WRT),
]
