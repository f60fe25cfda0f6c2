"""resnet_unit against central differences (float64, NHWC, KRSC filters): the plain unit with a 3x3 filter, the
shortcut unit of 1x1 filters (the shortcut's conv2d-shaped [K, C, 1, 1]) with strides 2, fuse_add, and is_test (frozen
statistics). Its grad's second derivative is refused by name."""

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
REFUSED = [second_order("resnet_unit", SHORTCUT, STRIDED, wrt=WRT)]
