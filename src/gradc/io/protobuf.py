"""ProgramDesc protobuf messages <-> the in-memory IR. Unknown attributes and var types are carried
through untouched, so a load/save round trip reproduces the file byte for byte."""

from __future__ import annotations

from ..ir import AttrType, Block, OpDesc, Program, VarDesc, VarType, var_attrs_of
from ..proto import framework_pb2 as pb

# AttrType -> (protobuf field, is repeated)
_ATTR_FIELDS = {
    AttrType.INT: ("i", False), AttrType.FLOAT: ("f", False), AttrType.STRING: ("s", False),
    AttrType.INTS: ("ints", True), AttrType.FLOATS: ("floats", True),
    AttrType.STRINGS: ("strings", True), AttrType.BOOLEAN: ("b", False),
    AttrType.BOOLEANS: ("bools", True), AttrType.BLOCK: ("block_idx", False),
    AttrType.LONG: ("l", False), AttrType.BLOCKS: ("blocks_idx", True),
    AttrType.LONGS: ("longs", True), AttrType.FLOAT64S: ("float64s", True),
    AttrType.VAR: ("var_name", False), AttrType.VARS: ("vars_name", True),
    AttrType.FLOAT64: ("float64", False), AttrType.SCALAR: ("scalar", False),
    AttrType.SCALARS: ("scalars", True),
}
_MESSAGE_ATTRS = {AttrType.SCALAR, AttrType.SCALARS}  # kept as serialized Scalar bytes
_MODELED_TENSOR_FIELDS = {
    VarType.DENSE_TENSOR: "dense_tensor",
    VarType.DENSE_TENSOR_ARRAY: "tensor_array",
    VarType.SELECTED_ROWS: "selected_rows",
    VarType.SPARSE_COO: "sparse_coo",
    VarType.SPARSE_CSR: "sparse_csr",
}
# the fields that hold a bare TensorDesc (no lod level)
_BARE_TENSOR_FIELDS = {"selected_rows", "sparse_coo", "sparse_csr"}


# ---------------------------------------------------------------- protobuf -> IR

def program_from_proto(msg: pb.ProgramDesc) -> Program:
    from .fast_read import Reader  # it converts through this module's converters

    reader = Reader()
    program = Program.empty()
    header_from_proto(msg, program)
    for block_msg in msg.blocks:
        block = Block(program, block_msg.idx, block_msg.parent_idx)
        if block_msg.HasField("forward_block_idx"):
            block.forward_block_idx = block_msg.forward_block_idx
        for var_msg in block_msg.vars:
            var = reader.var(var_msg.SerializeToString(), var_msg)
            block.vars[var.name] = var
        block.ops = [reader.op(op_msg.SerializeToString(), op_msg) for op_msg in block_msg.ops]
        program.blocks.append(block)
    return program


def header_from_proto(msg: pb.ProgramDesc, program: Program) -> None:
    """The program's version and op version map, where the message has them."""
    if msg.HasField("version"):
        program.version = msg.version.version if msg.version.HasField("version") else 0
    if msg.HasField("op_version_map"):
        program.op_version_map = [(p.op_name, p.op_version.version) for p in msg.op_version_map.pair]


def _var_from_proto(msg: pb.VarDesc) -> VarDesc:
    var = VarDesc.__new__(VarDesc)
    var.name = msg.name
    var.type = msg.type.type
    var.dtype = var.shape = var.lod_level = var.raw_type = None
    for flag in ("persistable", "need_check_feed", "is_parameter", "stop_gradient"):
        setattr(var, flag, getattr(msg, flag) if msg.HasField(flag) else None)
    var.attrs, var.dist = tuple(a.SerializeToString(deterministic=True) for a in msg.attrs), ()
    field = _MODELED_TENSOR_FIELDS.get(var.type)
    present = [f.name for f, _ in msg.type.ListFields() if f.name != "type"]
    if present == [] or (field is not None and present == [field]):
        if field is not None and present:
            sub = getattr(msg.type, field)
            tensor = sub if field in _BARE_TENSOR_FIELDS else sub.tensor
            var.dtype = tensor.data_type
            var.shape = list(tensor.dims)
            if field not in _BARE_TENSOR_FIELDS and sub.HasField("legacy_lod_level"):
                var.lod_level = sub.legacy_lod_level
    else:
        var.raw_type = msg.type.SerializeToString(deterministic=True)
    return var


def _op_from_proto(msg: pb.OpDesc) -> OpDesc:
    op = OpDesc.__new__(OpDesc)
    op.type = msg.type
    op.inputs = {v.parameter: list(v.arguments) for v in msg.inputs}
    op.outputs = {v.parameter: list(v.arguments) for v in msg.outputs}
    op.is_target = msg.is_target if msg.HasField("is_target") else None
    op.attrs = {}
    op.attr_types = {}
    repeated = []
    for position, attr in enumerate(msg.attrs):
        if attr.name in op.attrs:
            repeated.append((position, attr.SerializeToString(deterministic=True)))
            continue
        op.attrs[attr.name] = attr_value(attr)
        op.attr_types[attr.name] = attr.type
    op.repeated_attrs = tuple(repeated)
    op.var_attrs = var_attrs_of(op.attr_types)
    return op


def attr_value(attr: pb.OpDesc.Attr):
    """An attribute's value as the IR holds it (a SCALAR as its message's bytes)."""
    field, repeated = _ATTR_FIELDS[attr.type]
    if attr.type in _MESSAGE_ATTRS:
        value = getattr(attr, field)
        if repeated:
            return [s.SerializeToString(deterministic=True) for s in value]
        return value.SerializeToString(deterministic=True) if attr.HasField(field) else None
    if repeated:
        return list(getattr(attr, field))
    return getattr(attr, field) if attr.HasField(field) else None


# ---------------------------------------------------------------- IR -> protobuf

def program_to_proto(program: Program) -> pb.ProgramDesc:
    msg = pb.ProgramDesc()
    for block in program.blocks:
        block_msg = msg.blocks.add()
        block_msg.idx = block.idx
        block_msg.parent_idx = block.parent_idx
        if block.forward_block_idx is not None:
            block_msg.forward_block_idx = block.forward_block_idx
        for var in block.vars.values():
            _var_to_proto(var, block_msg.vars.add())
        for op in block.ops:
            _op_to_proto(op, block_msg.ops.add())
    if program.version is not None:
        msg.version.version = program.version
    if program.op_version_map is not None:
        msg.op_version_map.SetInParent()
        for name, version in program.op_version_map:
            pair = msg.op_version_map.pair.add()
            pair.op_name = name
            pair.op_version.version = version
    return msg


def _var_to_proto(var: VarDesc, msg: pb.VarDesc) -> None:
    msg.name = var.name
    if var.raw_type is not None:
        msg.type.ParseFromString(var.raw_type)
    else:
        msg.type.type = var.type
        field = _MODELED_TENSOR_FIELDS.get(var.type)
        if field is not None and var.dtype is not None:
            sub = getattr(msg.type, field)
            tensor = sub if field in _BARE_TENSOR_FIELDS else sub.tensor
            tensor.data_type = var.dtype
            tensor.dims.extend(var.shape or [])
            if var.lod_level is not None:
                sub.legacy_lod_level = var.lod_level
    for flag in ("persistable", "need_check_feed", "is_parameter", "stop_gradient"):
        value = getattr(var, flag)
        if value is not None:
            setattr(msg, flag, value)
    for raw in var.attrs:
        msg.attrs.add().ParseFromString(raw)


def _op_to_proto(op: OpDesc, msg: pb.OpDesc) -> None:
    msg.type = op.type
    for slot, args in op.inputs.items():
        msg.inputs.add(parameter=slot, arguments=args)
    for slot, args in op.outputs.items():
        msg.outputs.add(parameter=slot, arguments=args)
    for name, value in op.attrs.items():
        attr_type = op.attr_types[name]
        attr = msg.attrs.add(name=name, type=attr_type)
        if value is None:
            continue
        field, repeated = _ATTR_FIELDS[attr_type]
        if attr_type in _MESSAGE_ATTRS:
            if repeated:
                for raw in value:
                    getattr(attr, field).add().ParseFromString(raw)
            else:
                attr.scalar.ParseFromString(value)
        elif repeated:
            getattr(attr, field).extend(value)
        else:
            setattr(attr, field, value)
    for position, raw in op.repeated_attrs:
        attr = pb.OpDesc.Attr.FromString(raw)
        if position >= len(msg.attrs):
            msg.attrs.append(attr)
        else:
            msg.attrs.insert(position, attr)
    if op.is_target is not None:
        msg.is_target = op.is_target
