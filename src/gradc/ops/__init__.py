"""Op definitions, one module per family. Importing this package registers them all."""

from . import (  # noqa: F401
    activation,
    clip,
    constant,
    control_flow,
    conv,
    index,
    io,
    logic,
    loss,
    math,
    nn,
    optimizer,
    optimizer_adam,
    reduce,
    shape,
    tensor,
)
