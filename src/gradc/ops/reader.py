"""The reader ops of a DataLoader.from_generator(iterable=False) program (legacy static: fluid.io.DataLoader,
paddle.base.reader.DataLoader): create_py_reader makes a reader over a queue Python fills in Paddle's process,
create_double_buffer_reader wraps it, and read takes a batch from it into the data vars (its Out).

gradc has no such queue: the batch comes from the feed. read passes each fed data var through, and refuses, naming
the vars, when one is not fed. None has a gradient (Paddle registers none)."""

from __future__ import annotations

from ..ir import AttrType
from ..registry import NO_GRAD, defop, typed

INTS = typed([], AttrType.INTS)

defop("create_py_reader", ["blocking_queue"], ["Out[]"], attrs={
    "dtypes": INTS, "lod_levels": INTS, "need_check_feed": INTS, "ranks": INTS, "shape_concat": INTS,
    "use_data_config": True, "device_count": 1, "device_index": 0}, undeclared_inputs=["blocking_queue"], grad=NO_GRAD)
defop("create_double_buffer_reader", ["UnderlyingReader"], ["Out"], attrs={"place": "AUTO"}, grad=NO_GRAD)
defop("read", ["Reader"], ["Out[]"], attrs={"throw_eof_exp": True, "drop_last": True, "infer_out": True},
      grad=NO_GRAD)
