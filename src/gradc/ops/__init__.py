"""Op definitions, one module per family. Importing this package registers them all."""

from . import (  # noqa: F401
    activation,
    clip,
    constant,
    control_flow,
    conv,
    hsigmoid,
    index,
    io,
    logic,
    loss,
    math,
    nn,
    nn_activation,
    optimizer,
    optimizer_adam,
    reduce,
    sequence_loss,
    shape,
    tensor,
)
