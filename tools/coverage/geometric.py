"""Rows: paddle.geometric, message passing over graphs given as edge lists, and segment reductions."""

import paddle
import paddle.geometric as G

from .spec import f, table

SRC, DST = [0, 1, 2, 0, 2], [1, 2, 1, 0, 1]


def edges():
    return paddle.to_tensor(SRC), paddle.to_tensor(DST)


ROWS = table(
    "geometric",
    *[(f"send_u_recv_{reduce}", lambda x, reduce=reduce: G.send_u_recv(x, *edges(), reduce), f(3, 4))
      for reduce in ("sum", "mean", "max", "min")],
    ("send_u_recv_out_size", lambda x: G.send_u_recv(x, *edges(), "sum", out_size=4), f(3, 4)),
    *[(f"send_ue_recv_{message}_{reduce}", lambda x, e, message=message, reduce=reduce:
       G.send_ue_recv(x, e, *edges(), message, reduce), f(3, 4), f(5, 4))
      for message, reduce in (("add", "sum"), ("mul", "mean"), ("sub", "max"), ("div", "min"))],
    ("send_ue_recv_broadcast", lambda x, e: G.send_ue_recv(x, e, *edges(), "mul", "sum"), f(3, 2, 4), f(5, 1, 4)),
    ("send_uv_add", lambda x, y: G.send_uv(x, y, *edges(), "add"), f(3, 4), f(3, 4)),
    ("send_uv_mul_broadcast", lambda x, y: G.send_uv(x, y, *edges(), "mul"), f(3, 4), f(3, 1)),
    *[(f"segment_{reduce}", lambda x, reduce=reduce: getattr(G, f"segment_{reduce}")(x, paddle.to_tensor([0, 0, 1, 3])),
       f(4, 3)) for reduce in ("sum", "mean", "max", "min")],
)
