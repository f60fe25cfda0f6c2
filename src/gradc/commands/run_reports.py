"""What `gradc run` says about each fetched value (a line of text, or with --json its fields), and the documents of
`gradc check --json` and `gradc precision --json`. The values themselves are not printed (a tensor may hold
millions): --out writes them."""

from __future__ import annotations

import numpy as np

from ..executor.lod import LoDTensor
from ..executor.selected_rows import as_dense
from .json_output import number, problem


def dense_array(value) -> np.ndarray:
    """A fetched value as an array: a LoD tensor's without its LoD, selected rows made dense."""
    return np.asarray(as_dense(value.array if isinstance(value, LoDTensor) else value))


def summary_line(name: str, value) -> str:
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "biufc":
        return f"{name}: {type(value).__name__ if value is None or not isinstance(value, np.ndarray) else value.dtype}"
    head = f"{name}: {value.dtype}{list(value.shape)}"
    if value.size == 1:
        return f"{head} = {value.reshape(()).item():.8g}"
    if value.dtype.kind == "f" and value.size:
        return f"{head} mean={value.mean():.6g} min={value.min():.6g} max={value.max():.6g}"
    return head


def fetched(name: str, value) -> dict:
    """name, dtype, shape, size; a one-element var's value; mean, min and max of a larger int or float one; the NaN
    and infinity counts of a float or complex one; a LoD's levels (offsets)."""
    array = dense_array(value)
    record = {"name": name, "dtype": str(array.dtype), "shape": list(array.shape), "size": int(array.size)}
    if isinstance(value, LoDTensor):
        record["lod"] = [list(map(int, level)) for level in value.lod]
    kind = array.dtype.kind
    if kind not in "biufc":   # strings, objects: the dtype says what it is
        return record
    if array.size == 1:
        record["value"] = number(array.reshape(()).item())
    elif array.size and kind in "iuf":
        record.update(mean=number(float(array.mean())), min=number(array.min().item()), max=number(array.max().item()))
    if kind in "fc":
        record.update(nan=int(np.isnan(array).sum()), inf=int(np.isinf(array).sum()))
    return record


def mismatch_place(mismatch) -> str:
    """Where a gradient check found its mismatch (a gradcheck_verdicts.Mismatch): at an element or along a direction."""
    return f"along direction {mismatch.direction}" if mismatch.direction is not None else f"at {list(mismatch.index)}"


def kinks_said(check) -> str:
    """What a check's row adds for the elements, or the random directions, at a kink (gradcheck.VarCheck.kinks),
    which it does not compare."""
    if not check.kinks:
        return ""
    first = check.kinks[0]
    if first.direction is None:
        return (f"; {len(check.kinks)} at a kink, not compared (no derivative: the loss's slopes on either side "
                f"differ), e.g. {list(first.index)}: left {first.left:.6g}, right {first.right:.6g}, compiled "
                f"{first.compiled:.6g}")
    return (f"; {len(check.kinks)} of the {check.directions} directions cross a kink, not compared (no derivative "
            f"along them: the loss's slopes on either side differ), e.g. direction {first.direction}: left "
            f"{first.left:.6g}, right {first.right:.6g}, compiled {first.compiled:.6g}"
            + ("; no direction compared: the elements' check (--max-elements) tells the kinks apart"
               if compared_nothing(check) else ""))


def compared_nothing(check) -> bool:
    """Every random direction of ``check`` crossed a kink: it agrees with nothing, and is no 'ok'."""
    return bool(check.directions) and len(check.kinks) == check.directions


def checked_document(program: str, losses: list[str], checks, rtol: float, atol: float,
                     reasons: dict[str, str] | None = None, loss_of: dict[str, str] | None = None) -> dict:
    """`gradc check --json`: the losses differentiated (``loss`` the one, null with several, whose sum it was), each
    var's comparison (gradcheck.VarCheck) and each mismatch as a problem, with the ``reasons`` ('; ...' clauses, by
    var) that explain it, as the text's error line gives them; ``loss_of``: each var's own loss (several
    minimize()s), as its record's "loss"."""
    variables, problems = [], []
    for c in checks:
        m = c.mismatch
        record = {"var": c.var, "size": c.size, "checked": c.checked, "directions": c.directions,
                  "max_abs_error": number(c.max_abs_error), "ok": m is None, "mismatch": None,
                  "compared_nothing": compared_nothing(c), "no_path_to_loss": c.no_path_to_loss,
                  "kinks": [{"index": None if k.direction is not None else list(k.index), "direction": k.direction,
                             "compiled": number(k.compiled), "left": number(k.left), "right": number(k.right)}
                            for k in c.kinks]}
        if loss_of:
            record["loss"] = loss_of.get(c.var)
        if m is not None:
            record["mismatch"] = {"index": None if m.direction is not None else list(m.index), "direction": m.direction,
                                  "compiled": number(m.analytic), "numeric": number(m.numeric)}
            problems.append(problem(f"the gradient of '{c.var}' differs from central differences {mismatch_place(m)}: "
                                    f"compiled {m.analytic:.6g}, numeric {m.numeric:.6g}"
                                    f"{(reasons or {}).get(c.var, '')}", var=c.var))
        variables.append(record)
    return {"program": str(program), "loss": losses[0] if len(losses) == 1 else None, "losses": losses,
            "ok": not problems, "rtol": rtol, "atol": atol, "vars": variables, "problems": problems}


def precision_document(program: str, rows) -> dict:
    """`gradc precision --json`: the rows (rounding_audit.OpRounding), worst first, and the eps the text quotes (the
    first row's; each row has its output's own, which differs in a program mixing float16 and float32)."""
    return {"program": str(program), "eps": rows[0].eps,
            "rows": [{"op": row.index, "type": row.type, "output": row.var, "error": number(float(row.error)),
                      "inputs": number(float(row.inputs)), "growth": number(float(row.growth)),
                      "own": None if row.own is None else number(float(row.own)), "eps": row.eps,
                      "dtype": row.dtype} for row in rows]}
