"""Declarations Paddle 3.3.1 leaves stale in legacy programs, told apart and corrected where a loss depends on them:
slogdeterminant's Out is declared with Input's shape ([..., N, N]) though its kernel writes [2, ...] (sign and
log|det|). A declaration of Input's rank is never the true one (one rank less), so it is corrected, and the shapes
of the ops after it, declared from it when Paddle built them, are inferred again."""

from __future__ import annotations

from ..ir import Block
from ..shapes import numel
from ..verify_shapes import op_inference


def corrected_shapes(block: Block, upto: int) -> dict[str, list[int]] | None:
    """{var: its true shape} for the stale slogdeterminant outputs of ops up to index ``upto`` and every var an op
    after one computes from them; None where an op on the way has no shape inference (verify_shapes.op_inference) or
    gives no shape."""
    corrected: dict[str, list[int]] = {}
    if not any(op.type == "slogdeterminant" for op in block.ops[:upto + 1]):   # nothing stale: no walk
        return corrected
    for index, op in enumerate(block.ops[:upto + 1]):
        if op.type == "slogdeterminant" and op.input("Input") and op.output("Out"):
            matrix, out = block.find_var(op.input("Input")[0]), block.find_var(op.output("Out")[0])
            if matrix is not None and out is not None and matrix.shape is not None and out.shape == matrix.shape:
                corrected[out.name] = [2, *matrix.shape[:-2]]
            continue
        if not corrected.keys() & set(op.input_names()):
            continue
        try:
            inference = op_inference(block, index, op, corrected)
        except Exception:   # an inference that cannot take the true shapes: the declarations stay as they are
            return None
        if inference is None:
            return None
        for slot, results in inference[1].items():
            for name, (shape, _) in zip(op.output(slot), results if isinstance(results, list) else [results]):
                if shape is None:
                    return None
                corrected[name] = list(shape)
    return corrected


def corrected_to_one_value(block: Block, name: str, upto: int) -> dict[str, list[int]] | None:
    """corrected_shapes(block, upto) where they make ``name`` (declared with several values) one value, else None."""
    corrected = corrected_shapes(block, upto)
    return corrected if corrected and name in corrected and numel(corrected[name]) == 1 else None
