"""Paddle's fused recurrent op ``rnn`` (what nn.LSTM, nn.GRU and nn.SimpleRNN emit in static mode) and its
``rnn_grad``; the semantics, with their sources and checks, are in docs/rnn.md. In short:

- Input [T, B, I] is time major; PreState is [h] or [h, c] (LSTM), each [L * D, B, H] indexed l * D + d;
  WeightList is every (layer, direction)'s W_ih [G * H, in], W_hh [G * H, H], then every b_ih, b_hh [G * H].
- Gate order: LSTM (i, f, g, o): c' = f * c + i * g, h' = o * tanh(c'); GRU (r, z, n):
  n = tanh(x W_in + b_in + r * (h W_hn + b_hn)) (the reset gate multiplies the hidden projection with its
  bias), h' = z * h + (1 - z) * n; RNN_TANH / RNN_RELU: h' = act(x W_ih + b_ih + h W_hh + b_hh).
- Direction 1 runs backwards in time; Out concatenates the directions on the features, State stacks them.
- SequenceLength: past a sequence's length Out is zero and the state is carried unchanged.
- dropout_prob > 0 without is_test: one mask of Out's shape (DropoutState, uint8) scales every layer's
  input but the first's; gradc draws it with numpy (seeded by ``seed`` when nonzero), so its random stream
  differs from Paddle's. is_test skips dropout.
- Reserve is what rnn_grad reads: Paddle declares it UINT8 with dims [] and fills it with floats. gradc does
  the same: the kernel returns its float Reserve [L, D, T, B, W] as the bytes of it, uint8
  [L, D, T, B, W * itemsize] (a view, no copy), so the var keeps its declared dtype; rnn_grad views them
  back as Input's dtype. The layout is gradc's own (docs/rnn.md section 3), not Paddle's.
"""

from __future__ import annotations

from ..ir import VarType
from ..registry import defop, grad_op
from ..rnn_shape import MODES, RnnShape, named, shape_problems

RNN_ATTRS = {"mode": "RNN_TANH", "num_layers": 1, "is_bidirec": False, "input_size": 10, "hidden_size": 100,
             "dropout_prob": 0.0, "is_test": False, "seed": 0}


def attr_problem(mode, num_layers, input_size, hidden_size, dropout_prob) -> str | None:
    """Why the attributes cannot describe an rnn op, or None (shared with the kernel)."""
    if mode not in MODES:
        return f"mode '{mode}' is not one of {', '.join(MODES)}"
    for name, value in (("num_layers", num_layers), ("input_size", input_size), ("hidden_size", hidden_size)):
        if value < 1:
            return f"attribute {name}={value} must be at least 1"
    if not 0 <= dropout_prob <= 1:
        return f"attribute dropout_prob={dropout_prob} must lie in [0, 1]"
    return None


def rnn_shape_of(attr) -> RnnShape:
    """The op's RnnShape from its attributes (``attr(name)`` reads one)."""
    return RnnShape(attr("mode"), attr("num_layers"), 2 if attr("is_bidirec") else 1, attr("input_size"),
                    attr("hidden_size"))


def describe_problems(op, problems: list[tuple[str, str]]) -> str:
    """shape_problems' findings as one message naming each slot and its var."""
    return "; ".join(f"{named(op, slot)} {message}" for slot, message in problems)


def _infer(ctx):
    attr = ctx.attr
    problem = attr_problem(attr("mode"), attr("num_layers"), attr("input_size"), attr("hidden_size"),
                           attr("dropout_prob"))
    if problem:
        ctx.fail(problem)
    shape = rnn_shape_of(attr)
    x = ctx.shape("Input")
    problems = shape_problems(shape, x, ctx.shapes("PreState"), ctx.shapes("WeightList"))
    if ctx.has("SequenceLength"):
        lengths, dtype = ctx.shape("SequenceLength"), ctx.dtype("SequenceLength")
        batch = x[1] if len(x) == 3 else -1
        if len(lengths) != 1 or (lengths[0] >= 0 and batch >= 0 and lengths[0] != batch) or \
                dtype not in (VarType.INT32, VarType.INT64):
            problems.append(("SequenceLength", f"must be an int32/int64 vector [B={batch}], got "
                                               f"{VarType(dtype).name if dtype is not None else '?'} {lengths}"))
    if ctx.dtype("Input") not in (VarType.FP32, VarType.FP64):
        problems.append(("Input", "must be float32 or float64"))
    if problems:
        ctx.fail(describe_problems(ctx.op, problems))
    out = [x[0], x[1], shape.directions * shape.hidden_size]
    return {"Out": (out, ctx.dtype("Input")),
            "State": [(ctx.shape("PreState", k), ctx.dtype("PreState", k)) for k in range(shape.states)],
            "Reserve": (None, VarType.UINT8), "DropoutState": (None, VarType.UINT8)}


defop("rnn", ["Input", "PreState[]", "WeightList[]", "SequenceLength?"],
      ["Out", "DropoutState?", "State[]", "Reserve"], attrs=RNN_ATTRS, infer=_infer,
      no_grad_inputs=["SequenceLength"], no_grad_outputs=["DropoutState", "Reserve"],
      grad=grad_op("Input", "PreState", "WeightList", "SequenceLength", "Out", "DropoutState", "Reserve"))

