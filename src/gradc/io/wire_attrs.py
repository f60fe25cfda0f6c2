"""An OpDesc.Attr's field as gradc.io.wire writes it, with the caches of one save: attribute values a program
repeats are encoded once."""

from __future__ import annotations

from ..ir import AttrType
from .wire_values import (
    LIST_FIELDS,
    SCALAR_FIELDS,
    SMALL,
    TEXT_LIST_TAGS,
    Unusual,
    length_prefixed,
    text_field,
    text_fields,
    varint,
)

_BY_VALUE = (int, str, bool, type(None))   # attribute values cached by value (and floats but zeros)
_ATTR_TYPES = frozenset(map(int, AttrType))
_FLOAT_LISTS = (AttrType.FLOATS, AttrType.FLOAT64S)
_ATTR_STARTS = [b"\x22" + SMALL[size] for size in range(128)]   # an OpDesc.Attr's tag and length
# a text list element's tag and length, by the list's type and the element's size
_TEXT_STARTS = {kind: [tag + SMALL[size] for size in range(128)] for kind, tag in TEXT_LIST_TAGS.items()}


class AttrEncoder:
    """The attribute half of one save's encoder (gradc.io.wire.Encoder): its caches."""

    def __init__(self):
        self._attrs: dict[tuple, bytes] = {}
        self._attr_heads: dict[tuple, bytes] = {}   # (name, type) -> an OpDesc.Attr's fields 1 and 2
        self._held: list = []   # float lists cached by identity stay alive (their ids unique) during the save

    def attr(self, name: str, kind: int, value) -> bytes:
        """An OpDesc.Attr, tagged as the OpDesc's field 4."""
        listed = type(value) is list
        if listed and value and kind in TEXT_LIST_TAGS:   # not cached: a grad op's op_role_var names its own parameter
            return self._text_list(name, kind, value)
        if listed:   # by value and exact element types; float lists by identity (-0.0 == 0.0)
            key = ((name, kind, list, None) if not value else (name, kind, id(value)) if kind in _FLOAT_LISTS
                   else (name, kind, tuple(value), tuple(map(type, value))))
            encoded = self._attrs.get(key)
            if encoded is not None:
                return encoded
        body = self._attr_heads.get((name, kind)) or self._attr_head(name, kind)
        if value is not None:
            if kind in LIST_FIELDS:
                if not listed:
                    raise Unusual
                body += b"".join([LIST_FIELDS[kind](v) for v in value])
            elif kind in SCALAR_FIELDS:
                body += SCALAR_FIELDS[kind](value)
            elif not (listed and kind in TEXT_LIST_TAGS):   # an empty text list is its name and type alone
                raise Unusual
        encoded = length_prefixed(b"\x22", body)
        if listed:
            if kind in _FLOAT_LISTS:
                self._held.append(value)
            self._attrs[key] = encoded
        elif type(value) in _BY_VALUE or type(value) is float and value:   # not 0.0: -0.0 == 0.0
            self._attrs[(name, kind, type(value), value)] = encoded
        return encoded

    def _text_list(self, name: str, kind: int, value: list) -> bytes:
        """A STRINGS or VARS attribute: its elements, the program's var names mostly, each encoded after the field's
        tag and its length."""
        head = self._attr_heads.get((name, kind)) or self._attr_head(name, kind)
        starts = _TEXT_STARTS[kind]
        pieces = [head]
        try:
            for element in value:   # a loop of appends: cheaper than a join of map's unpacked results
                data = element.encode()
                pieces.append(starts[len(data)])
                pieces.append(data)
            body = b"".join(pieces)
        except (AttributeError, UnicodeError, IndexError):   # not a str, or long: encoded here
            body = head + text_fields(TEXT_LIST_TAGS[kind], value)
        size = len(body)
        return (_ATTR_STARTS[size] if size < 128 else b"\x22" + varint(size)) + body

    def _attr_head(self, name: str, kind: int) -> bytes:
        """An OpDesc.Attr's name and type fields, which every value of that attribute starts with."""
        if kind not in _ATTR_TYPES:
            raise Unusual
        head = self._attr_heads[(name, kind)] = text_field(b"\x0a", name) + b"\x10" + varint(kind)
        return head
