"""Rows: ops that show values while a program runs, paddle.static.Print (in the forward, the backward or both) and
paddle.amp.debugging.check_numerics (its counts and statistics, read by the loss as constants)."""

import paddle
from paddle.amp.debugging import DebugMode, check_numerics

from .spec import f, table

ROWS = table(
    "debug",
    ("print", lambda x: paddle.static.Print(x * 2.0, message="doubled", summarize=3), f(2, 3)),
    ("print_backward", lambda x: paddle.static.Print(paddle.tanh(x), print_phase="backward", first_n=1), f(2, 3)),
    ("print_plain", lambda x: paddle.static.Print(x, print_tensor_name=False, print_tensor_type=False,
                                                  print_tensor_shape=False, print_tensor_lod=False), f(2, 3)),
    ("check_numerics", lambda x: x * check_numerics(x, "row", "x", debug_mode=DebugMode.CHECK_ALL)[1].sum(), f(2, 3)),
    ("check_numerics_counts", lambda x: x * check_numerics(paddle.nn.functional.relu(x), "row", "relu",
                                                           DebugMode.CHECK_NAN_INF)[0].astype("float32").sum(),
     f(3, 4)),
)
