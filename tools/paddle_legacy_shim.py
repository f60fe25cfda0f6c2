"""Give Paddle 3.3.1's C-only Python APIs a legacy-static path again, for collecting op types.

In 3.3.1 about fifty APIs (paddle.matmul, exp, sigmoid, sum, F.gelu, ...) are bound straight to C
functions that accept only PIR Values or eager Tensors: in legacy static mode (FLAGS_enable_pir_api=0)
any layer that calls one raises. Programs saved by older Paddle hold the legacy ops these APIs used to
append, so `install()` rebinds each of them, wherever paddle's modules and Variable hold it, to a
function that appends that legacy op. Only the slots and attributes that shape inference needs are set.
"""

from __future__ import annotations

import sys

import paddle
from paddle.base.layer_helper import LayerHelper

INT64 = 3  # framework.proto VarType.INT64


def _reduce_attrs(axis=None, *_, keepdim=False, **__):
    axes = [] if axis is None else ([axis] if isinstance(axis, int) else list(axis))
    return {"dim": axes or [0], "keep_dim": keepdim, "reduce_all": not axes}


def _logsumexp_attrs(axis=None, keepdim=False, name=None, **_):
    axes = [] if axis is None else ([axis] if isinstance(axis, int) else list(axis))
    return {"axis": axes or [0], "keepdim": keepdim, "reduce_all": not axes}


def _arg_attrs(axis=None, keepdim=False, *_, **__):
    return {"axis": 0 if axis is None else axis, "keepdims": keepdim, "flatten": axis is None, "dtype": INT64}


def _matmul_attrs(transpose_x=False, transpose_y=False, name=None, **_):
    return {"trans_x": transpose_x, "trans_y": transpose_y}


def _tri_attrs(lower):
    return lambda diagonal=0, name=None, **_: {"diagonal": diagonal, "lower": lower}


UNARY = ["abs", "acos", "acosh", "asin", "atanh", "ceil", "cos", "cosh", "exp", "expm1", "floor", "log",
         "log2", "log10", "log1p", "logical_not", "round", "rsqrt", "sigmoid", "sign", "sin", "sinh", "sqrt",
         "tanh"]
BINARY = {"multiply": "elementwise_mul", "maximum": "elementwise_max", "minimum": "elementwise_min",
          "greater_than": "greater_than", "logical_and": "logical_and", "logical_or": "logical_or",
          "logical_xor": "logical_xor", "bmm": "bmm", "dot": "dot"}

# API name -> (legacy op type, input slots, attrs from the API's non-tensor arguments)
SHIMS = {name: (name, ("X",), None) for name in UNARY}
SHIMS.update({name: (op, ("X", "Y"), None) for name, op in BINARY.items()})
SHIMS.update({
    "isnan": ("isnan_v2", ("X",), None), "isinf": ("isinf_v2", ("X",), None),
    "isfinite": ("isfinite_v2", ("X",), None),
    "sum": ("reduce_sum", ("X",), _reduce_attrs), "amax": ("reduce_amax", ("X",), _reduce_attrs),
    "amin": ("reduce_amin", ("X",), _reduce_attrs), "all": ("reduce_all", ("X",), _reduce_attrs),
    "any": ("reduce_any", ("X",), _reduce_attrs), "logsumexp": ("logsumexp", ("X",), _logsumexp_attrs),
    "argmax": ("arg_max", ("X",), _arg_attrs), "argmin": ("arg_min", ("X",), _arg_attrs),
    "matmul": ("matmul_v2", ("X", "Y"), _matmul_attrs),
    "tril": ("tril_triu", ("X",), _tri_attrs(True)), "triu": ("tril_triu", ("X",), _tri_attrs(False)),
    "gelu": ("gelu", ("X",), lambda approximate=False, name=None, **_: {"approximate": bool(approximate)}),
    "softplus": ("softplus", ("X",), lambda beta=1.0, threshold=20.0, name=None, **_: {"beta": beta,
                                                                                        "threshold": threshold}),
    "expand_as": ("expand_as_v2", ("X", "Y"), None),
})


def _legacy_api(op_type: str, slots: tuple[str, ...], attrs_of):
    def api(*args, **kwargs):
        tensors, rest = list(args[:len(slots)]), args[len(slots):]
        tensors += [kwargs.pop(slot.lower()) for slot in slots[len(tensors):]]
        kwargs.pop("name", None)
        attrs = attrs_of(*rest, **kwargs) if attrs_of else {}
        if op_type == "expand_as_v2":
            attrs = {"target_shape": list(tensors[1].shape)}
        helper = LayerHelper(op_type)
        out = helper.create_variable_for_type_inference(tensors[0].dtype)
        helper.append_op(type=op_type, inputs=dict(zip(slots, tensors)), outputs={"Out": out}, attrs=attrs)
        return out

    api.__name__ = op_type
    return paddle.jit.not_to_static(api)   # dy2static would look for the op type's name in its source


def install() -> list[str]:
    """Rebind every C-only API in paddle's loaded modules and on Variable; returns the API names."""
    import paddle.nn.functional as F
    from paddle.static import Variable

    shim_of = {}
    for name, spec in SHIMS.items():
        shim = _legacy_api(*spec)
        for holder in (paddle, paddle.tensor, F):
            obj = getattr(holder, name, None)
            if obj is not None and not isinstance(obj, type(sys)):
                shim_of[id(obj)] = shim
        if name in Variable.__dict__:
            shim_of[id(Variable.__dict__[name])] = shim
            setattr(Variable, name, shim)
    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("paddle") and module is not paddle._C_ops:
            for attr, value in list(vars(module).items()):
                if id(value) in shim_of and callable(value):
                    setattr(module, attr, shim_of[id(value)])
    for name in SHIMS:   # paddle.tensor's generated methods (triu, ...) are not in its module's vars
        for holder in (paddle, paddle.tensor, F):
            if id(getattr(holder, name, None)) in shim_of:
                setattr(holder, name, shim_of[id(getattr(holder, name))])
    return sorted(SHIMS)
