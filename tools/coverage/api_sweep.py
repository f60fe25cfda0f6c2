"""Rows: Paddle 3.3.1 public functions no other row called (a sweep of paddle, paddle.nn.functional, paddle.linalg,
paddle.fft and paddle.geometric for names no row's code holds)."""

import paddle
import paddle.nn.functional as F

from .spec import f, ints, table, unit


def _ints(*values):
    return paddle.to_tensor(list(values))


ROWS = table(
    "api_sweep",
    ("ormqr", lambda x, t, y: paddle.linalg.ormqr(x, t, y), f(3, 3), f(3), f(3, 2)),
    ("ormqr_right_transpose", lambda x, t, y: paddle.linalg.ormqr(x, t, y, left=False, transpose=True),
     f(3, 3), f(3), f(2, 3)),
    ("hfft2", lambda x, y: paddle.fft.hfft2(paddle.complex(x, y)), f(3, 4), f(3, 4)),
    ("ihfftn", lambda x: paddle.real(paddle.fft.ihfftn(x)) + paddle.imag(paddle.fft.ihfftn(x)), f(3, 4)),
    ("ifft2_real", lambda x, y: paddle.real(paddle.fft.ifft2(paddle.complex(x, y))), f(3, 4), f(3, 4)),
    ("hfftn", lambda x, y: paddle.fft.hfftn(paddle.complex(x, y), axes=[0, 1]), f(3, 4), f(3, 4)),
    ("view_as_real", lambda x, y: paddle.view_as_real(paddle.complex(x, y)), f(3, 2), f(3, 2)),
    ("view_as_complex", lambda x: paddle.real(paddle.view_as_complex(x)) * 2.0, f(3, 2)),
    ("isposinf_isneginf", lambda x: x * (paddle.isposinf(x / paddle.zeros_like(x)).astype("float32")
                                         - paddle.isneginf(x / paddle.zeros_like(x)).astype("float32")), f(3, 4)),
    ("signbit", lambda x: x * paddle.signbit(x).astype("float32"), f(3, 4)),
    ("histogram_bin_edges", lambda x: x * paddle.histogram_bin_edges(x, bins=3, min=0.0, max=1.0).sum(), f(4)),
    ("l1_loss", lambda x, y: F.l1_loss(x, y), f(3, 4), f(3, 4)),
    ("matrix_transpose", lambda x: paddle.matrix_transpose(x), f(2, 3, 4)),
    ("swapaxes", lambda x: paddle.swapaxes(x, 0, 2), f(2, 3, 4)),
    ("mm", lambda x, y: paddle.mm(x, y), f(2, 3), f(3, 4)),
    ("bitwise_invert", lambda x, i: x * paddle.bitwise_invert(i).astype("float32"), f(5), ints(7, 5)),
    ("true_divide_floor_mod", lambda x, y: paddle.true_divide(x, y + 3.0) + paddle.floor_mod(x, y + 3.0),
     f(3, 4), unit(3, 4)),
)
