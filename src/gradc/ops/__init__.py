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
    optimizer,
    reduce,
    rnn,
    shape,
    tensor,
    tensor_array,
)
