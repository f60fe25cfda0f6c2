"""Op definitions, one module per family. Importing this package registers them all."""

from . import activation, io, loss, math, reduce, shape, tensor  # noqa: F401
