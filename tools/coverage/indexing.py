"""Rows: Python indexing of a Tensor, `x[...]` and `x[...] = v`, in the forms models write (ints, slices with
steps, reversal, None and Ellipsis, lists, index Tensors, boolean masks), which Paddle lowers to slice,
strided_slice, gather, index_select, masked_select, set_value and index_put."""

import paddle

from .spec import f, table


def _ints(*values):
    return paddle.to_tensor(list(values))


def _set(x, index, value):
    """`x[index] = value` as static programs write it (a Variable's __setitem__ is refused there)."""
    return paddle.static.setitem(paddle.scale(x, 1.0), index, value)


GETITEM = table(
    "indexing",
    ("getitem_int", lambda x: x[1], f(3, 4)),
    ("getitem_negative", lambda x: x[-1, 1:], f(3, 4)),
    ("getitem_steps", lambda x: x[1:, ::2], f(3, 5)),
    ("getitem_reversed", lambda x: x[::-1], f(3, 4)),
    ("getitem_ellipsis_none", lambda x: x[..., None, 1], f(2, 3, 4)),
    ("getitem_list", lambda x: x[[0, 2]], f(3, 4)),
    ("getitem_list_axis1", lambda x: x[:, [3, 1, 1]], f(3, 4)),
    ("getitem_tensor", lambda x: x[_ints(2, 0)], f(3, 4)),
    ("getitem_two_tensors", lambda x: x[_ints(0, 2), _ints(1, 3)], f(3, 4)),
    ("getitem_bool_mask", lambda x: x[x > 0], f(3, 4)),
    ("getitem_bool_rows", lambda x: x[paddle.to_tensor([True, False, True])], f(3, 4)),
)

SETITEM = table(
    "indexing",
    ("setitem_int", lambda x: _set(x, 1, 0.5), f(3, 4)),
    ("setitem_slice_tensor", lambda x, v: _set(x, (slice(None), slice(1, 3)), v), f(3, 4), f(3, 2)),
    ("setitem_steps_broadcast", lambda x, v: _set(x, (slice(None, None, 2), 1), v), f(5, 3), f(1)),
    ("setitem_reversed", lambda x, v: _set(x, slice(None, None, -1), v), f(3, 4), f(3, 4)),
    ("setitem_list", lambda x, v: _set(x, [0, 2], v), f(3, 4), f(2, 4)),
    ("setitem_tensor_index", lambda x, v: _set(x, _ints(2, 0), v), f(3, 4), f(4)),
    # a decoding loop's x[:, i] = v (PaddleOCR's SAR): the position a 0-d Tensor
    ("setitem_tensor_position", lambda x, v: _set(x, (slice(None), paddle.full([], 1, "int64")), v), f(3, 4), f(3)),
    ("setitem_bool_mask", lambda x: _set(x, x > 0, 0.0), f(3, 4)),
    ("setitem_bool_mask_tensor", lambda x, v: _set(x, x > 0.5, v), f(3, 4), f(1)),
)

ROWS = GETITEM + SETITEM
