"""Op definitions, one module per family. Importing this package registers them all."""

from . import (  # noqa: F401
    activation,
    control_flow,
    conv,
    index,
    interp,
    io,
    logic,
    loss,
    math,
    nn,
    norm,
    optimizer,
    pool,
    reduce,
    shape,
    tensor,
    vision,
)
