"""logic ops (see the module docstrings of gradc.ops.math for the style)."""
