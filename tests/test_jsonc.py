"""The JSONC reader and text editor behind `suggest --apply`: what users write is read, and an edit
changes only the text of what changes."""

from __future__ import annotations

import json
import re

import pytest

from q9diff import jsonc

# The shape of the wrapper Qualcomm's documentation shows, comments and trailing commas included.
COMMENTED = """\
// qnn-context-binary-generator --config_file
{
    /* the extension library and its config */
    "graphs": [
        {
            "graph_names": ["prompt_ar32", "token_ar1"], // both parts
            "vtcm_mb": 8,
            "O": 3.0,
        },
    ],

    "devices": [{"soc_id":60, "dsp_arch": "v73"}],
    "memory": {}
}
"""


def test_comments_trailing_commas_and_number_spelling_are_read():
    root = jsonc.parse(COMMENTED)
    assert root.to_python() == {
        "graphs": [{"graph_names": ["prompt_ar32", "token_ar1"], "vtcm_mb": 8, "O": 3.0}],
        "devices": [{"soc_id": 60, "dsp_arch": "v73"}],
        "memory": {},
    }
    o = root.get("graphs").items[0].get("O")
    assert COMMENTED[o.start : o.end] == "3.0"


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{"a": 1,, "b": 2}', "line 1 column 9"),
        ('{\n  "soc_model": <TODO>\n}', "line 2 column 16"),
        ("{/* open", "unclosed /* comment"),
        ('{"a": NaN}', "expected a JSON value"),
        ("[" * 300 + "]" * 300, "nesting deeper than 256"),
        ('{"a": 1} x', "text after the JSON value"),
        ('{"soc_model": ' + "9" * 100_000 + "}", "a number too long to read at line 1 column 15"),
    ],
)
def test_what_is_not_json_is_an_error_that_says_where(text, where):
    with pytest.raises(jsonc.JsoncError, match=re.escape(where)):
        jsonc.parse(text)


def test_a_value_change_is_the_text_of_that_value_only():
    root = jsonc.parse(COMMENTED)
    e = jsonc.Editor(COMMENTED, root)
    e.replace(root.get("graphs").items[0].get("O"), 2)
    e.replace(root.get("devices").items[0].get("soc_id"), 77)
    after = e.result()
    assert after == COMMENTED.replace('"O": 3.0,', '"O": 2.0,').replace('"soc_id":60', '"soc_id":77')


def test_added_keys_and_entries_follow_the_neighbours_layout():
    root = jsonc.parse(COMMENTED)
    e = jsonc.Editor(COMMENTED, root)
    graphs = root.get("graphs")
    e.add_member(graphs.items[0], "weights_packing", True, after="vtcm_mb")
    e.append_item(graphs, {"graph_names": ["vision"], "vtcm_mb": 4})
    e.add_member(root.get("devices").items[0], "soc_model", 77, after="soc_id")
    e.add_member(root.get("memory"), "mem_type", "shared_buffer")
    e.add_member(root, "context", {"weight_sharing_enabled": True})
    after = e.result()
    assert after == (
        "// qnn-context-binary-generator --config_file\n"
        "{\n"
        "    /* the extension library and its config */\n"
        '    "graphs": [\n'
        "        {\n"
        '            "graph_names": ["prompt_ar32", "token_ar1"], // both parts\n'
        '            "vtcm_mb": 8,\n'
        '            "weights_packing": true,\n'
        '            "O": 3.0,\n'
        "        },\n"
        "        {\n"
        '            "graph_names": ["vision"],\n'
        '            "vtcm_mb": 4\n'
        "        },\n"
        "    ],\n"
        "\n"
        '    "devices": [{"soc_id":60, "soc_model":77, "dsp_arch": "v73"}],\n'
        '    "memory": {\n'
        '        "mem_type": "shared_buffer"\n'
        "    },\n"
        '    "context": {\n'
        '        "weight_sharing_enabled": true\n'
        "    }\n"
        "}\n"
    )
    assert jsonc.loads(after)["graphs"][0]["weights_packing"] is True


def test_a_member_after_a_line_comment_keeps_the_comment_on_its_line():
    text = '{\n  "a": 1 // one\n}'
    root = jsonc.parse(text)
    e = jsonc.Editor(text, root)
    e.add_member(root, "b", 2)
    assert e.result() == '{\n  "a": 1, // one\n  "b": 2\n}'


def test_line_ends_and_byte_order_mark_survive():
    text = '\ufeff{\r\n\t"devices": [\r\n\t\t{"soc_model": 0}\r\n\t]\r\n}\r\n'
    root = jsonc.parse(text)
    e = jsonc.Editor(text, root)
    e.replace(root.get("devices").items[0].get("soc_model"), 77)
    e.add_member(root, "graphs", [{"graph_names": ["g"], "O": 3}])
    after = e.result()
    assert after == (
        '\ufeff{\r\n\t"devices": [\r\n\t\t{"soc_model": 77}\r\n\t],\r\n'
        '\t"graphs": [\r\n\t\t{\r\n\t\t\t"graph_names": ["g"],\r\n\t\t\t"O": 3\r\n\t\t}\r\n\t]\r\n}\r\n'
    )
    assert json.loads(after.lstrip("\ufeff")) == {
        "devices": [{"soc_model": 77}],
        "graphs": [{"graph_names": ["g"], "O": 3}],
    }


def test_nan_is_never_written():
    root = jsonc.parse('{"O": 3}')
    e = jsonc.Editor('{"O": 3}', root)
    with pytest.raises(ValueError):
        e.replace(root.get("O"), float("nan"))
