"""Hostile input, round 5 (issue 43), names: a name inside a container is neither a key nor a path. Two
methods (EPContext nodes, DISPATCH_OPs) may both be called `forward`, a node `/model/ctx_0`, a method 300
characters long; each context is its position, labelled by its name escaped, cut and numbered where names
repeat. And the one escape of names covers every format character. Every hostile file is built here from
the fixtures' own bytes (scripts/pte_writer.py; the EPContext and LiteRT writers of test_hostile_bundle).
"""

from __future__ import annotations

import json
import sys
import unicodedata
from pathlib import Path

import pytest
from conftest import FIXTURES
from test_hostile_bundle import dispatch_tflite, q9

from q9diff.errors import printable
from q9diff.read.labels import MAX_LABEL, label, unique

sys.path.insert(0, str(FIXTURES.parent / "scripts"))
import pte_writer as W  # noqa: E402

VARIANTS = FIXTURES / "variants"
G1, G2, O1 = ((VARIANTS / f"{n}.bin").read_bytes() for n in ("graphs_1", "graphs_2", "opt_1"))


def two_methods(path: Path, first: str, second: str, payloads: tuple[str, str]) -> Path:
    """A .pte of two methods named `first` and `second`, one QNN delegate each, over two fixtures'
    payloads."""
    q = W.parts().qnn
    methods = [W.Method(first, [W.Delegate(1)]), W.Method(second, [W.Delegate(2)])]
    path.write_bytes(W.write(methods, [b"", q[payloads[0]], q[payloads[1]]]))
    return path


def embedded_model(path: Path, nodes: list[tuple[str, bytes]]) -> Path:
    """An EPContext model whose nodes (name, context bytes) embed their contexts (embed_mode 1)."""
    onnx = pytest.importorskip("onnx")
    helper, tp = onnx.helper, onnx.TensorProto
    made = [
        helper.make_node("EPContext", ["x"], [f"y{i}"], name=name, domain="com.microsoft", embed_mode=1,
                         ep_cache_context=data, source="QNNExecutionProvider")
        for i, (name, data) in enumerate(nodes)
    ]  # fmt: skip
    outputs = [helper.make_tensor_value_info(f"y{i}", tp.FLOAT, [1]) for i in range(len(nodes))]
    graph = helper.make_graph(made, "g", [helper.make_tensor_value_info("x", tp.FLOAT, [1])], outputs)
    onnx.save(helper.make_model(graph), path)
    return path


def named_tflite(path: Path, ops: list[tuple[str, bytes]]) -> Path:
    """A LiteRT model whose DISPATCH_OPs (name, bytecode) hold their bytecode one after another."""
    at, ranges, body = 1 << 19, [], b""
    for _, code in ops:
        ranges.append((len(body), len(code)))
        body += code
    return dispatch_tflite(path, body, ranges, at=at, names=[n for n, _ in ops])


def _parts(run) -> list[tuple[str, bool]]:
    data = json.loads(run.stdout)
    return [(p["part"], p["identical"]) for p in data["parts"]]


# ---- 1. names that repeat: each context compared with its own counterpart -----------------------------


def test_two_pte_with_two_methods_both_named_forward_are_compared_context_by_context(tmp_path):
    """The high hole: both contexts took the name `forward`, the set paired the first with itself twice,
    and two .pte whose second method differs were "Identical", exit 0."""
    a = two_methods(tmp_path / "a.pte", "forward", "forward", ("fp16_sm8650", "w8a8_sm8650"))
    b = two_methods(tmp_path / "b.pte", "forward", "forward", ("fp16_sm8650", "fp16_sm8650"))
    done = q9("diff", a, b, "--json")
    assert done.returncode == 1, done.stderr
    assert _parts(done) == [("a.pte#forward", True), ("a.pte#forward~2", False)]
    assert q9("diff", a, a).returncode == 0
    assert q9("diff", f"{a}#forward~2", f"{b}#forward~2").returncode == 1
    assert q9("diff", f"{a}#forward", f"{b}#forward").returncode == 0


def test_epcontext_nodes_and_dispatch_ops_named_alike_are_as_many_contexts(tmp_path):
    a = embedded_model(tmp_path / "a.onnx", [("ctx", G1), ("ctx", G2)])
    b = embedded_model(tmp_path / "b.onnx", [("ctx", G1), ("ctx", O1)])
    done = q9("diff", a, b, "--json")
    assert done.returncode == 1 and _parts(done) == [("a.onnx#ctx", True), ("a.onnx#ctx~2", False)]
    a = named_tflite(tmp_path / "a.tflite", [("p", G1), ("p", G2)])
    b = named_tflite(tmp_path / "b.tflite", [("p", G1), ("p", O1)])
    done = q9("diff", a, b, "--json")
    assert done.returncode == 1 and _parts(done) == [("a.tflite#p", True), ("a.tflite#p~2", False)]


def test_containers_of_one_and_of_two_contexts_are_diffed_as_sets(tmp_path):
    """Found by scripts/fuzz_surfaces.py: a .pte of one context against one of two was refused as "a file
    and a set of parts"; two containers are two sets, the second context unpaired (split), and parts of a
    container that have no counterpart are sized by its index, not stat'ed as files."""
    q = W.parts().qnn
    one = tmp_path / "one.pte"
    one.write_bytes(W.write([W.Method("a", [W.Delegate(1)])], [b"", q["fp16_sm8650"]]))
    two = two_methods(tmp_path / "two.pte", "a", "b", ("fp16_sm8650", "w8a8_sm8650"))
    for args in ((one, two), (two, one)):
        done = q9("diff", *args, "--json")
        assert done.returncode == 1, done.stderr
        data = json.loads(done.stdout)
        assert [c["name"] for c in data["causes"]] == ["split"]
        assert data["unpaired_a"] + data["unpaired_b"] == [f"{two}#b"]
        assert data["unpaired_sizes"]["a"] + data["unpaired_sizes"]["b"] == [49152]
    assert q9("suggest", one, two).returncode in (0, 1)


def test_labels_are_unique_numbered_in_order_and_linear():
    assert unique(["forward", "forward", "forward~2", "forward"]) == ["forward", "forward~3", "forward~2",
                                                                      "forward~4"]  # fmt: skip
    many = unique(["f"] * 20000)
    assert len(set(many)) == 20000 and many[:3] == ["f", "f~2", "f~3"]


# ---- 2. names that look like paths, and names longer than a file name can be ----------------------


@pytest.mark.parametrize("container", ["onnx", "tflite", "pte"])
def test_path_like_names_are_labels_every_command_reads(tmp_path, container):
    """`/model/ctx_0` (as exporters name EPContext nodes) and `a/b` went through Path.with_name: diff,
    suggest and doctor ended in "internal error"."""
    names = ("/model/ctx_0", "a/b")
    if container == "onnx":
        path = embedded_model(tmp_path / "m.onnx", [(names[0], G1), (names[1], G2)])
    elif container == "tflite":
        path = named_tflite(tmp_path / "m.tflite", [(names[0], G1), (names[1], G2)])
    else:
        path = two_methods(tmp_path / "m.pte", *names, ("fp16_sm8650", "w8a8_sm8650"))
    done = q9("diff", path, path, "--json")
    assert done.returncode == 0, done.stderr
    assert [p for p, _ in _parts(done)] == [f"m.{container}#\\x2fmodel\\x2fctx_0", f"m.{container}#a\\x2fb"]
    for args in (("suggest", path, path), ("doctor", path), ("diff", path, "--target", "QCS9100"),
                 ("inspect", path), ("inspect", f"{path}#a\\x2fb")):  # fmt: skip
        run = q9(*args)
        assert run.returncode in (0, 1) and "Traceback" not in run.stderr, (args, run.stderr)
        assert "internal error" not in run.stderr, (args, run.stderr)


def test_a_300_character_method_name_is_a_label_no_file_system_call_sees(tmp_path):
    """FILE#NAME went through os.stat: a 300-character name was "File name too long" in diff and an
    internal error with --target."""
    long_a, long_b = "a" * 300, "b" * 300
    a = two_methods(tmp_path / "a.pte", long_a, long_b, ("fp16_sm8650", "w8a8_sm8650"))
    b = two_methods(tmp_path / "b.pte", long_a, long_b, ("fp16_sm8650", "fp16_sm8650"))
    done = q9("diff", a, b, "--json")
    assert done.returncode == 1, done.stderr
    parts = _parts(done)
    assert [len(p.split("#", 1)[1]) for p, _ in parts] == [MAX_LABEL, MAX_LABEL]
    assert [same for _, same in parts] == [True, False]
    for args in (("suggest", a, b), ("doctor", a), ("diff", a, "--target", "QCS9100"),
                 ("inspect", f"{a}#{long_b}"), ("doctor", f"{a}#{long_a}")):  # fmt: skip
        run = q9(*args)
        assert run.returncode in (0, 1), (args[0], run.stderr)
        assert "Traceback" not in run.stderr and "internal error" not in run.stderr, run.stderr
    missing = q9("inspect", f"{a}#{'c' * 300}")
    assert missing.returncode == 2 and len(missing.lines) == 1 and "a context named" in missing.stderr


def test_a_label_is_escaped_cut_and_never_empty():
    assert label("a/b#c\\d", "~0") == "a\\x2fb\\x23c\\x5cd"
    assert label("size 10\u061c 20", "~0") == "size 10\\u061c 20"
    assert label("", "~3") == "~3" and len(label("x" * 300, "~0")) == MAX_LABEL
    assert "/" not in label("/" * 300, "~0") and label("/" * 300, "~0").endswith("…")


# ---- 3. the one escape -------------------------------------------------------------------------------


def test_the_one_escape_covers_every_format_and_separator_character():
    """U+061C ARABIC LETTER MARK was not escaped: a method named "size 10<ALM> 20" showed as "size 20 10"
    in the HTML page. Every Cf (format), Zl and Zp character of this Python's Unicode is escaped now."""
    wanted = [chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) in ("Cf", "Zl", "Zp")]
    assert len(wanted) > 150
    left = [f"U+{ord(c):04X}" for c in wanted if printable(c) == c]
    assert left == []
    assert printable("lone \ud800") == "lone \\ud800" and printable("plain é, 中") == "plain é, 中"


def test_a_bidi_mark_in_a_method_name_is_shown_escaped_in_every_view(tmp_path):
    name = "size 10\u061c 20"
    a = two_methods(tmp_path / "a.pte", name, "forward", ("fp16_sm8650", "w8a8_sm8650"))
    b = two_methods(tmp_path / "b.pte", name, "forward", ("w8a8_sm8650", "w8a8_sm8650"))
    page, md = tmp_path / "r.html", tmp_path / "r.md"
    done = q9("diff", a, b, "--html", page, "--markdown", md)
    assert done.returncode == 1, done.stderr
    for text in (done.stdout, page.read_text(), md.read_text()):  # Markdown escapes the backslash again
        assert "\u061c" not in text and "u061c 20" in text
    inspect = q9("inspect", a)
    assert inspect.returncode == 0 and "\u061c" not in inspect.stdout and "\\u061c" in inspect.stdout
