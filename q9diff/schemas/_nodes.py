"""Small builders for JSON Schema nodes (a typed value, an object, a list, a reference to a shared
definition), which every schema document of q9diff is written with (q9diff.schemas.make and the modules it
reads); the definitions several documents share are q9diff.schemas._defs."""

from __future__ import annotations

import copy


def typed(kind: str, description: str, **extra) -> dict:
    return {"type": kind, "description": description, **extra}


def string(description: str, **extra) -> dict:
    return typed("string", description, **extra)


def integer(description: str, **extra) -> dict:
    return typed("integer", description, **extra)


def size(description: str) -> dict:
    """A size, an offset or a count: an integer that is never negative."""
    return typed("integer", description, minimum=0)


def number(description: str) -> dict:
    return typed("number", description)


def boolean(description: str) -> dict:
    return typed("boolean", description)


def anything(description: str) -> dict:
    """Any JSON value (no type keyword)."""
    return {"description": description}


def words(values, description: str) -> dict:
    """One of a closed set of strings."""
    return {"type": "string", "enum": list(values), "description": description}


def maybe(node: dict) -> dict:
    """`node`, or null."""
    out = copy.deepcopy(node)
    if "$ref" in out or "anyOf" in out:
        description = out.pop("description", None)
        inner = out.pop("anyOf", None) or [out]
        out = {"anyOf": [*inner, {"type": "null"}]}
        if description:
            out["description"] = description
        return out
    kinds = out.get("type")
    if kinds is not None:
        out["type"] = [*([kinds] if isinstance(kinds, str) else kinds), "null"]
    if "enum" in out:
        out["enum"] = [*out["enum"], None]
    return out


def array(items: dict, description: str) -> dict:
    return {"type": "array", "description": description, "items": items}


def strings(description: str) -> dict:
    return array({"type": "string"}, description)


def mapping(values: dict, description: str) -> dict:
    """An object whose keys are data (names, labels), each value of one shape."""
    return {"type": "object", "description": description, "additionalProperties": values}


def obj(description: str, properties: dict, optional=()) -> dict:
    """An object with named fields: every field required but the `optional` ones; fields not listed are
    allowed (the schema ids keep their version while fields are added)."""
    unknown = set(optional) - set(properties)
    if unknown:
        raise ValueError(f"optional fields not among the properties: {sorted(unknown)}")
    return {
        "type": "object",
        "description": description,
        "required": [k for k in properties if k not in optional],
        "properties": properties,
        "additionalProperties": True,
    }


def ref(name: str, description: str | None = None) -> dict:
    out = {"$ref": f"#/$defs/{name}"}
    if description:
        out["description"] = description
    return out


def per_graph(node: dict, description: str) -> dict:
    """One value when every graph of the binary agrees, else a list of one value per graph."""
    return {"description": description, "anyOf": [node, {"type": "array", "items": node}]}


def const(value: str, description: str) -> dict:
    return {"const": value, "description": description}


EARLIER = " Absent from results saved by earlier versions of q9diff, which `q9diff report` still reads."
