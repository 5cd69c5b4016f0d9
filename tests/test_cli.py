"""The command line as a user runs it: real fixtures in, exit codes and one-line errors out."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import all_bins


def q9diff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "from q9diff.cli import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_inspect_json_shape(fixtures_dir):
    path = all_bins()[0]
    r = q9diff("inspect", str(path), "--json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["schema"] == "q9diff.inspect/1"
    assert s["size"] == path.stat().st_size == sum(x["size"] for x in s["regions"])
    g = s["graphs"][0]
    for key in ("name", "inputs", "outputs", "spill_fill_buffer_size", "vtcm_size", "options", "ops"):
        assert key in g
    assert {"name", "dtype", "dims", "scale", "offset"} <= set(g["inputs"][0])


def test_inspect_oracle_agrees(fixtures_dir):
    r = q9diff("inspect", str(all_bins()[0]), "--oracle")
    assert r.returncode == 0, r.stderr
    assert "oracle (libQnnSystem) agrees on every field" in r.stdout


def test_bad_inputs_give_one_line_and_exit_2(tmp_path, fixtures_dir):
    good = all_bins()[0].read_bytes()
    cases = {
        "text.bin": b"hello, not a context binary\n" * 10,
        "empty.bin": b"",
        "truncated.bin": good[: len(good) // 2],
        "huge_length.bin": good[:0x20] + (2**62).to_bytes(8, "little") + good[0x28:],
        "bad_meta.bin": good[:0x28] + b"\xff" * 64 + good[0x28 + 64 :],
    }
    for name, data in cases.items():
        p = tmp_path / name
        p.write_bytes(data)
        for cmd in (["inspect", str(p)], [str(p), str(all_bins()[0])]):
            r = q9diff(*cmd)
            assert r.returncode == 2, (name, r.stdout, r.stderr)
            lines = r.stderr.strip().splitlines()
            assert len(lines) == 1 and str(p) in lines[0] and "Traceback" not in r.stderr, (name, r.stderr)
    assert q9diff("inspect", str(tmp_path / "missing.bin")).returncode == 2


def test_epcontext_onnx_embedded_and_referenced(tmp_path, fixtures_dir):
    onnx = pytest.importorskip("onnx")
    helper, TensorProto = onnx.helper, onnx.TensorProto

    binary = tmp_path / "ctx.bin"  # ONNX Runtime names the context file beside the model, relatively
    binary.write_bytes(all_bins()[0].read_bytes())
    for embed in (1, 0):
        node = helper.make_node(
            "EPContext",
            ["x"],
            ["y"],
            domain="com.microsoft",
            embed_mode=embed,
            ep_cache_context=binary.read_bytes() if embed else binary.name,
            source="QNNExecutionProvider",
        )
        graph = helper.make_graph(
            [node],
            "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
        )
        model = tmp_path / f"ctx_{embed}.onnx"
        onnx.save(helper.make_model(graph), model)
        r = q9diff("inspect", str(model), "--json")
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["size"] == binary.stat().st_size
