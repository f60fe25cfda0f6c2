"""The sequence losses written again with differentiable ops, so their grad ops' makers
(gradc.ops.sequence_loss_double) can differentiate them: the forward (alpha) recursion in log space, unrolled over
the known time steps and vectorised over the batch and the label positions, as the kernels
(gradc.executor.kernels.sequence_loss) define it. Unreachable states hold the finite NEG rather than -inf, so no
logsumexp meets -inf - -inf and every gradient stays finite: exp(NEG - m) is exactly 0 beside any reachable state.
The labels come from integer ops at run time (one-hot rows pick the emissions), the padded lengths from masks.
"""

from __future__ import annotations

from ..ir import VarType
from .composite import Formula

NEG = -1e30   # "log 0": exactly 0 once exponentiated beside a finite value, and far from overflowing float32


class Lattice:
    """Helpers emitting into ``f`` ops whose outputs have given dims (``batch`` is -1 when known at run time)."""

    def __init__(self, f: Formula, like: str, batch: int):
        self.f, self.like, self.batch = f, like, batch
        self.dtype = int(f.g.block.var(like).dtype)

    def op(self, type: str, inputs: dict, dims: list[int], attrs: dict | None = None, like: str | None = None,
           slot: str = "Out", dtype=None, more: dict | None = None) -> str:
        return self.f.op(type, inputs, like or self.like, attrs, slot=slot, more=more, dims=lambda _: list(dims),
                         dtype=dtype)

    def binary(self, type: str, x: str, y: str, dims: list[int]) -> str:
        return self.op(type, {"X": x, "Y": y}, dims, {"axis": -1})

    def add(self, x: str, y: str, dims: list[int]) -> str:
        return self.binary("elementwise_add", x, y, dims)

    def mul(self, x: str, y: str, dims: list[int]) -> str:
        return self.binary("elementwise_mul", x, y, dims)

    def scale(self, x: str, dims: list[int], scale: float, bias: float = 0.0, like: str | None = None) -> str:
        return self.op("scale", {"X": x}, dims, {"scale": scale, "bias": bias, "bias_after_scale": True}, like=like)

    def slice(self, x: str, axis: int, start: int, end: int, dims: list[int], like: str | None = None,
              drop: bool = False) -> str:
        return self.op("slice", {"Input": x}, dims, {"axes": [axis], "starts": [start], "ends": [end],
                                                     "infer_flags": [1], "decrease_axis": [axis] if drop else []},
                       like=like)

    def pad(self, x: str, rank: int, axis: int, before: int, after: int, value: float, dims: list[int]) -> str:
        paddings = [0] * (2 * rank)
        paddings[2 * axis: 2 * axis + 2] = [before, after]
        return self.op("pad", {"X": x}, dims, {"paddings": paddings, "pad_value": value})

    def reshape(self, x: str, shape: list[int], dims: list[int], like: str | None = None) -> str:
        return self.op("reshape2", {"X": x}, dims, {"shape": shape}, like=like, more={"XShape": self.f.xshape(x)})

    def transpose(self, x: str, axis: list[int], dims: list[int]) -> str:
        return self.op("transpose2", {"X": x}, dims, {"axis": axis}, more={"XShape": self.f.xshape(x)})

    def pieces(self, type: str, x: str, slot: str, count: int, dims: list[int], attrs: dict) -> list[str]:
        """The ``count`` outputs (each of ``dims``) of an op splitting ``x`` (split, unstack)."""
        names = [self.f.g.tmp(self.like, lambda _: list(dims)) for _ in range(count)]
        self.f.emit(type, {"X": x}, {slot: names}, attrs)
        return names

    def reduce(self, type: str, x: str, axis: int, keep: bool, dims: list[int]) -> str:
        return self.op(type, {"X": x}, dims, {"dim": [axis], "keep_dim": keep, "reduce_all": False})

    def logsumexp(self, x: str, axis: int, dims: list[int]) -> str:
        """log(sum(exp(x))) along ``axis`` of ``x`` (``dims``), dropped, as max + log(sum(exp(x - max)))."""
        kept, out = dims[:axis] + [1] + dims[axis + 1:], dims[:axis] + dims[axis + 1:]
        shifted = self.binary("elementwise_sub", x, self.reduce("reduce_max", x, axis, True, kept), dims)
        total = self.reduce("reduce_sum", self.op("exp", {"X": shifted}, dims), axis, False, out)
        return self.add(self.op("log", {"X": total}, out), self.reduce("reduce_max", x, axis, False, out), out)

    def mask(self, lengths: str, maxlen: int, dtype: int) -> str:
        """[B, maxlen]: 1 where position < lengths[b], in ``dtype``."""
        return self.op("sequence_mask", {"X": lengths}, [self.batch, maxlen], {"maxlen": maxlen, "out_dtype": dtype},
                       like=lengths, slot="Y", dtype=dtype)

    def bias(self, mask: str, dims: list[int]) -> str:
        """0 where the float ``mask`` is 1, NEG where it is 0."""
        return self.scale(mask, dims, -NEG, NEG)

    def constant(self, dims: list[int], value: float) -> str:
        return self.op("fill_constant", {}, dims, {"shape": dims, "dtype": self.dtype, "value": value})

    def starts(self, width: int, reachable: int) -> str:
        """[width]: 0 at the first ``reachable`` places, NEG after (where a recursion may begin)."""
        return self.pad(self.constant([reachable], 0.0), 1, 0, 0, width - reachable, NEG, [width])

    def step_masks(self, lengths: str, steps: int) -> list[tuple[str, str]]:
        """Per time step, [B, 1] float masks (keep, drop): keep is 1 where t < lengths[b], drop = 1 - keep."""
        keep = self.mask(lengths, steps, self.dtype)
        keeps = self.pieces("split", keep, "Out", steps, [self.batch, 1], {"axis": 1, "num": steps}) if steps > 1 \
            else [keep]
        return [(k, self.scale(k, [self.batch, 1], -1.0, 1.0)) for k in keeps]

    def carried(self, new: str, old: str, masks: tuple[str, str], dims: list[int]) -> str:
        """new where the step runs, old past a sequence's end: keep * new + drop * old (no new - old, which
        would lose a finite value beside NEG)."""
        keep, drop = masks
        return self.add(self.mul(new, keep, dims), self.mul(old, drop, dims), dims)

    def used_labels(self, label: str, lengths: str, width: int) -> str:
        """The labels with every padded place (at or past its length) 0, a valid class."""
        dtype = int(self.f.g.block.var(label).dtype)
        used = self.mask(lengths, width, dtype)
        return self.op("elementwise_mul", {"X": label, "Y": used}, [self.batch, width], {"axis": -1}, like=label)

    def one_hot(self, index: str, depth: int, dims: list[int]) -> str:
        return self.op("one_hot_v2", {"X": index}, dims, {"depth": depth, "dtype": self.dtype,
                                                         "allow_out_of_range": False}, like=self.like)


def ctc_loss(lat: Lattice, logits: str, label: str, logits_length: str, label_length: str, blank: int,
             sizes: tuple[int, int, int, int]) -> str:
    """warpctc's Loss [B, 1]: -log p(label | softmax(logits)) per sequence, 0 for a label no alignment fits."""
    steps, batch, classes, width = sizes
    states = 2 * width + 1
    row = [batch, states]
    log_probs = lat.op("log_softmax", {"X": logits}, [steps, batch, classes], {"axis": 2})
    labels = lat.used_labels(label, label_length, width)
    blanks = lat.op("fill_any_like", {"X": labels}, [batch, width], {"value": float(blank), "dtype": -1}, like=label)
    pairs = lat.op("stack", {"X": [blanks, labels]}, [batch, width, 2], {"axis": 2}, like=label, slot="Y")
    interleaved = lat.reshape(pairs, [0, 2 * width], [batch, 2 * width], like=label)
    extended = lat.op("concat", {"X": [interleaved, lat.slice(blanks, 1, 0, 1, [batch, 1], like=label)]}, row,
                      {"axis": 1}, like=label)   # blank, l1, blank, l2, ..., blank
    emissions = lat.op("matmul_v2", {"X": lat.transpose(log_probs, [1, 0, 2], [batch, steps, classes]),
                                     "Y": lat.one_hot(extended, classes, row + [classes])},
                       [batch, steps, states], {"trans_x": False, "trans_y": True})
    emit = lat.pieces("unstack", lat.transpose(emissions, [1, 0, 2], [steps, batch, states]), "Y", steps, row,
                      {"axis": 0, "num": steps})
    # state s may skip from s - 2 when its label differs from that one: never for a blank (it equals the one before)
    differs = lat.op("not_equal", {"X": lat.slice(extended, 1, 2, states, [batch, states - 2], like=label),
                                   "Y": lat.slice(extended, 1, 0, states - 2, [batch, states - 2], like=label)},
                     [batch, states - 2], {"axis": -1}, dtype=VarType.BOOL)
    differs = lat.op("cast", {"X": differs}, [batch, states - 2], {"in_dtype": int(VarType.BOOL),
                                                                     "out_dtype": lat.dtype})
    skip = lat.pad(lat.bias(differs, [batch, states - 2]), 2, 1, 2, 0, NEG, row)
    masks = lat.step_masks(logits_length, steps)
    alpha = lat.add(emit[0], lat.starts(states, 2), row)
    for t in range(1, steps):
        stay = alpha
        advance = lat.pad(lat.slice(alpha, 1, 0, states - 1, [batch, states - 1]), 2, 1, 1, 0, NEG, row)
        jump = lat.add(lat.pad(lat.slice(alpha, 1, 0, states - 2, [batch, states - 2]), 2, 1, 2, 0, NEG, row), skip,
                       row)
        ways = lat.op("stack", {"X": [stay, advance, jump]}, [3] + row, {"axis": 0}, slot="Y")
        alpha = lat.carried(lat.add(lat.logsumexp(ways, 0, [3] + row), emit[t], row), alpha, masks[t], row)
    # each sequence ends in its last label or the blank after it: states 2 L - 1 and 2 L
    doubled = lat.scale(label_length, [batch], 2.0, 1.0, like=label_length)
    before = lat.scale(label_length, [batch], 2.0, -1.0, like=label_length)
    ends = lat.binary("elementwise_sub", lat.mask(doubled, states, lat.dtype), lat.mask(before, states, lat.dtype),
                      row)
    log_p = lat.logsumexp(lat.reshape(lat.add(alpha, lat.bias(ends, row), row), [0, 1, states], [batch, 1, states]),
                          2, [batch, 1, states])
    possible = lat.op("greater_than", {"X": log_p, "Y": lat.op("fill_any_like", {"X": log_p}, [batch, 1],
                                                                {"value": NEG / 2, "dtype": -1})},
                      [batch, 1], {"axis": -1}, dtype=VarType.BOOL)
    zeros = lat.op("fill_any_like", {"X": log_p}, [batch, 1], {"value": 0.0, "dtype": -1})
    return lat.op("where", {"Condition": possible, "X": lat.scale(log_p, [batch, 1], -1.0), "Y": zeros}, [batch, 1])


def rnnt_emissions(lat: Lattice, x: str, label: str, label_length: str, blank: int,
                   sizes: tuple[int, int, int, int]) -> tuple[str, str]:
    """From warprnnt's input [B, T, U + 1, C] of log-probabilities: the blank's [B, T, U + 1] and the next label's
    [B, T, U] at each lattice cell."""
    batch, steps, states, classes = sizes
    width = states - 1
    blanks = lat.slice(x, 3, blank, blank + 1, [batch, steps, states], drop=True)
    labels = lat.used_labels(label, label_length, width)
    picks = lat.reshape(lat.one_hot(labels, classes, [batch, width, classes]), [0, 1, width, classes],
                        [batch, 1, width, classes])
    cells = lat.slice(x, 2, 0, width, [batch, steps, width, classes])
    emit = lat.reduce("reduce_sum", lat.mul(cells, picks, [batch, steps, width, classes]), 3, False,
                      [batch, steps, width])
    return blanks, emit


def rnnt_loss(lat: Lattice, blanks: str, emit: str, input_length: str, label_length: str,
              sizes: tuple[int, int, int, int]) -> str:
    """warprnnt's loss [B]: -log p(label), summed over the lattice paths ending with the blank at (T_b - 1, U_b).
    Row t of alpha (log-probability of reaching (t, u)) from the row before, in one go over u: with E(u) the sum
    of the label emissions before u in row t and A(u') = alpha(t - 1, u') + blank(t - 1, u'),
    alpha(t, u) = E(u) + logsumexp over u' <= u of (A(u') - E(u'))."""
    batch, steps, states, _ = sizes
    row, cube = [batch, states], [batch, states, states]
    emitted = lat.op("cumsum", {"X": lat.pad(emit, 3, 2, 0, 1, 0.0, [batch, steps, states])}, [batch, steps, states],
                     {"axis": 2, "flatten": False, "exclusive": True, "reverse": False})

    def rows(value: str) -> list[str]:
        return lat.pieces("unstack", lat.transpose(value, [1, 0, 2], [steps, batch, states]), "Y", steps, row,
                          {"axis": 0, "num": steps})

    blank_rows, emitted_rows = rows(blanks), rows(emitted)
    lower = lat.op("tril_triu", {"X": lat.constant([states, states], 1.0)}, [states, states],
                   {"diagonal": 0, "lower": True})
    earlier = lat.bias(lower, [states, states])   # [u, u']: 0 where u' <= u
    masks = lat.step_masks(input_length, steps)
    after_blank = lat.starts(states, 1)   # A of row 0: the lattice starts at (0, 0)
    for t in range(steps):
        start = lat.add(lat.scale(emitted_rows[t], row, -1.0), after_blank, row)
        ways = lat.add(lat.reshape(start, [0, 1, states], [batch, 1, states]), earlier, cube)
        alpha = lat.add(lat.logsumexp(ways, 2, cube), emitted_rows[t], row)
        ended = lat.add(alpha, blank_rows[t], row)
        after_blank = ended if t == 0 else lat.carried(ended, after_blank, masks[t], row)
    last = lat.one_hot(label_length, states, row)
    return lat.scale(lat.reduce("reduce_sum", lat.mul(after_blank, last, row), 1, False, [batch]), [batch], -1.0)
