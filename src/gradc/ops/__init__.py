"""Op definitions, one module per family. Importing this package registers them all."""

from . import (  # noqa: F401
    activation,
    control_flow,
    conv,
    creation,
    index,
    io,
    logic,
    loss,
    math,
    nn,
    optimizer,
    pad,
    rearrange,
    reduce,
    select,
    set_value,
    shape,
    sort,
    tensor,
)
