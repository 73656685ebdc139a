"""Protobuf fields written as bytes: thousands of small messages built in Python cost more than their bytes.

Parsing or merging such bytes gives the message the fields would have set (field order does not matter to a
parser; the message serializes in its own order afterwards).
"""

from __future__ import annotations

from collections.abc import Sequence

NODE_INPUT, NODE_OUTPUT, NODE_NAME, NODE_DOC = 1 << 3 | 2, 2 << 3 | 2, 3 << 3 | 2, 6 << 3 | 2  # NodeProto fields
NODE_ATTRIBUTE = 5 << 3 | 2
ATTRIBUTE_NAME, ATTRIBUTE_S = 1 << 3 | 2, 4 << 3 | 2  # AttributeProto fields; its ``type`` is field 20, a varint
_ATTRIBUTE_TYPE_STRING = b"\xa0\x01\x03"  # field 20 (tag 160 as a varint), AttributeProto.STRING (3)
GRAPH_NODE = 1 << 3 | 2  # GraphProto.node


def _varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def field(tag: int, payload: bytes) -> bytes:
    """One length-delimited field (``tag`` is ``number << 3 | 2``)."""
    size = len(payload)
    return bytes((tag, size)) + payload if size < 0x80 else bytes((tag,)) + _varint(size) + payload


def text(tag: int, value: str) -> bytes:
    """One string field."""
    return field(tag, value.encode())


def string_attribute(name: str, value: str) -> bytes:
    """A NodeProto's ``attribute`` field holding one STRING attribute."""
    return field(NODE_ATTRIBUTE, text(ATTRIBUTE_NAME, name) + text(ATTRIBUTE_S, value) + _ATTRIBUTE_TYPE_STRING)


def node(fixed: bytes, inputs: Sequence[str], outputs: Sequence[str], name: str | None, doc: bytes) -> bytes:
    """A NodeProto: ``fixed`` (its other fields, serialized: op type, domain, attributes in order), inputs,
    outputs, a name (None: not set, "" is set) and ``doc`` (its doc_string field, or b"")."""
    parts = []
    add = parts.append
    for tag, values in ((NODE_INPUT, inputs), (NODE_OUTPUT, outputs), (NODE_NAME, () if name is None else (name,))):
        for value in values:
            data = value.encode()
            add(bytes((tag, len(data))) + data if len(data) < 0x80 else field(tag, data))
    add(fixed)
    add(doc)
    return b"".join(parts)
