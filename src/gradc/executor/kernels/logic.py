"""Kernels of gradc.ops.logic."""
