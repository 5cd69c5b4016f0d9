"""The JSON Schemas (draft 2020-12) of what q9diff's commands print with --json: one file per schema id,
`<id>.schema.json` with the id's '/' written '-' (q9diff.diff/1 is `q9diff.diff-1.schema.json`).

Every JSON document q9diff prints carries its id in `"schema"`; `schema(that id)` is the schema it is
valid against. The ids keep their version while fields are added: a consumer should allow fields it
does not know (every object's `additionalProperties` is true), and can rely on the required ones.

    import json, jsonschema
    from q9diff.schemas import schema
    data = json.loads(text)
    jsonschema.Draft202012Validator(schema(data["schema"])).validate(data)

The files are written by `python -m q9diff.schemas.make` from the code that writes the documents.
"""

from __future__ import annotations

import json
from importlib.resources import files

SCHEMAS = (
    "q9diff.diff/1",
    "q9diff.setdiff/1",
    "q9diff.target/1",
    "q9diff.load/1",
    "q9diff.doctor/1",
    "q9diff.verify/1",
    "q9diff.inspect/1",
    "q9diff.inspect-set/1",
    "q9diff.inspect-dlc/1",
    "q9diff.dlcdiff/1",
    "q9diff.explain/1",
    "q9diff.suggest/1",
    "q9diff.steps/1",
    "q9diff.layers/1",
)
SUFFIX = ".schema.json"


def file_name(schema_id: str) -> str:
    """The file that holds the schema of `schema_id`: q9diff.diff/1 -> q9diff.diff-1.schema.json."""
    if schema_id not in SCHEMAS:
        raise KeyError(f"{schema_id!r} is not a q9diff schema id; these are: {', '.join(SCHEMAS)}")
    return schema_id.replace("/", "-") + SUFFIX


def schema_uri(schema_id: str) -> str:
    """The schema's `$id`: a name, not an address to fetch (urn:q9diff:schema:q9diff.diff/1)."""
    file_name(schema_id)
    return f"urn:q9diff:schema:{schema_id}"


def schema(name: str) -> dict:
    """The schema (a fresh dict) of a schema id (`q9diff.diff/1`), its `$id` or its file name; KeyError
    for a name that is none of them."""
    by_name = {k: k for k in SCHEMAS} | {schema_uri(k): k for k in SCHEMAS}
    by_name |= {file_name(k): k for k in SCHEMAS}
    if name not in by_name:
        raise KeyError(f"{name!r} is not a q9diff schema id; these are: {', '.join(SCHEMAS)}")
    text = files(__name__).joinpath(file_name(by_name[name])).read_text(encoding="utf-8")
    return json.loads(text)
