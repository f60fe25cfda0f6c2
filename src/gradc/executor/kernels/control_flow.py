"""Kernels of gradc.ops.control_flow."""
