"""Op definitions, one module per family. Importing this package registers them all."""

from . import (  # noqa: F401
    activation,
    control_flow,
    conv,
    index,
    io,
    logic,
    loss,
    math,
    nn,
    nn_activation,
    optimizer,
    reduce,
    shape,
    tensor,
)
