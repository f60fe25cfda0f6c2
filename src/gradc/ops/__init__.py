"""Op definitions, one module per family. Importing this package registers them all."""

from . import activation, control_flow, conv, index, io, logic, loss, math, nn, optimizer, reduce, shape, tensor  # noqa: F401
