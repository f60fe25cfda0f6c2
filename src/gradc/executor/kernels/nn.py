"""Kernels of gradc.ops.nn."""
