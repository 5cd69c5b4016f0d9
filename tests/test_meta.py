"""`inspect --meta`: a qnn-context-binary-utility dump is judged. A dump of another binary (graph names,
contextBlobSize, buildId) is said to be one, in one line, exit 1; a dump of this binary is compared field
by field in the utility's real shape (the two real QNN 2.45 dumps in ../shared/real/utility: a `header`
block, string versions, vtcmSize in MB under graphBlobInfo.info, graphBlobInfoV2 as a sibling without an
info level), exit 0 when every field agrees and 1 when any disagrees.

The real dumps' binaries are not public, so "this binary" is a fixture whose dump is written here in the
real dumps' shape from libQnnSystem's own answer for it (the committed oracle JSON), keeping only keys
whose value libQnnSystem gives; a test checks that this shape is the real one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT, oracle_of
from conftest import q9diff_cli as q9diff

from q9diff.oracle.crosscheck import NOT_READ, utility_view
from q9diff.read.binary import ContextBinary
from q9diff.read.openers import contexts, locate

BIN = FIXTURES / "qwen-mini" / "reference" / "part_1_of_2.bin"
UTILITY = ROOT.parent / "shared" / "real" / "utility"
REAL_DUMPS = sorted(UTILITY.glob("*.json")) if UTILITY.is_dir() else []
QUANTIZED_IO = ROOT.parent / "shared" / "real" / "binaries" / "denoise_229_htp_vtcm8mb.serialized.bin"
needs_real = pytest.mark.skipif(
    not REAL_DUMPS or not QUANTIZED_IO.is_file(),
    reason=f"{UTILITY} or {QUANTIZED_IO} is absent: the real dumps and binaries live there",
)
# The header block every real dump starts with (QNN 2.42 and 2.45 alike): the dump format's own.
HEADER = {
    "artifact_type": "CONTEXT_BINARY_INFO",
    "version": {"major": 3, "minor": 0, "patch": 0},
    "header_version": {"major": 0, "minor": 1, "patch": 0},
}
MB = 1024 * 1024


def _tensor(t: dict) -> dict:
    if t["scale"] is None:  # as the real dumps print float tensors
        quant = {
            "definition": "QNN_DEFINITION_UNDEFINED",
            "quantizationEncoding": "QNN_QUANTIZATION_ENCODING_UNDEFINED",
        }
    else:
        quant = {
            "definition": "QNN_DEFINITION_DEFINED",
            "quantizationEncoding": "QNN_QUANTIZATION_ENCODING_SCALE_OFFSET",
            "scaleOffset": {"scale": t["scale"], "offset": t["offset"]},
        }
    return {
        "info": {
            "id": t["id"],
            "name": t["name"],
            "type": f"QNN_TENSOR_TYPE_{t['tensor_type']}",
            "dataFormat": "QNN_TENSOR_DATA_FORMAT_FLAT_BUFFER" if t["data_format"] == 0 else t["data_format"],
            "dataType": f"QNN_DATATYPE_{t['dtype']}",
            "rank": len(t["dims"]),
            "dimensions": t["dims"],
            "quantizeParams": quant,
        }
    }


def utility_json(o: dict) -> dict:
    """The dump qnn-context-binary-utility writes for the BinaryInfo libQnnSystem returned, in the real
    dumps' shape; keys libQnnSystem gives no value for here (platformInfo, memType, ...) are left out."""
    return {
        "header": HEADER,
        "version": f"QNN_SYSTEM_CONTEXT_BINARY_INFO_VERSION_{o['version']}",
        "info": {
            "backendId": o["backend_id"],
            "buildId": o["build_id"],
            "coreApiVersion": o["core_api_version"],
            "backendApiVersion": o["backend_api_version"],
            "socVersion": o["soc_version"],
            "contextBlobVersion": o["context_blob_version"],
            "contextBlobSize": o["context_blob_size"],
            "numGraphs": len(o["graphs"]),
            "graphs": [
                {
                    "version": f"QNN_SYSTEM_CONTEXT_GRAPH_INFO_VERSION_{g['version']}",
                    "info": {
                        "graphName": g["name"],
                        "numGraphInputs": len(g["inputs"]),
                        "graphInputs": [_tensor(t) for t in g["inputs"]],
                        "numGraphOutputs": len(g["outputs"]),
                        "graphOutputs": [_tensor(t) for t in g["outputs"]],
                        "graphBlobInfo": {
                            "version": "QNN_SYSTEM_CONTEXT_HTP_GRAPH_INFO_BLOB_VERSION_V1",
                            "info": {
                                "spillFillBufferSize": g["spill_fill_buffer_size"],
                                "optimizationLevel": g["optimization_level"],
                                "vtcmSize": g["vtcm_size"] // MB,
                                "htpDlbc": g["htp_dlbc"],
                                "numHvxThreads": g["num_hvx_threads"],
                            },
                        },
                        "graphBlobInfoV2": {
                            "version": "QNN_SYSTEM_CONTEXT_HTP_GRAPH_INFO_BLOB_VERSION_V2",
                            "nativeKChannelSize": g["native_k_channel_size"],
                            "nativeVChannelSize": g["native_v_channel_size"],
                            "isSafeShareIO": g["is_safe_share_io"],
                            "ioTensorSize": g["io_tensor_size"],
                            "opDataSize": g["op_data_size"],
                            "constSize": g["const_size"],
                            "ddrTensorSize": g["ddr_tensor_size"],
                            "sharedWeightsSize": g["shared_weights_size"],
                        },
                    },
                }
                for g in o["graphs"]
            ],
            "contextMetadata": {
                "version": "QNN_SYSTEM_CONTEXT_HTP_CONTEXT_INFO_BLOB_VERSION_V1",
                "info": {"dspArch": o["dsp_arch"]},
            },
            "socModel": o["soc_model"],
        },
    }


def _keys(node, path: str = "") -> set[str]:
    """Every key path of a dump or view, list items collapsed to []."""
    out = set()
    if isinstance(node, dict):
        for k, v in node.items():
            p = f"{path}.{k}" if path else k
            out |= {p} | _keys(v, p)
    elif isinstance(node, list):
        for item in node:
            out |= _keys(item, f"{path}[]")
    return out


def _inspect(dump: dict, tmp_path: Path, binary: Path = BIN):
    path = tmp_path / "meta.json"
    path.write_text(json.dumps(dump))
    return q9diff("inspect", "--json", "--meta", str(path), str(binary))


def test_a_dump_of_this_binary_agrees_on_every_field_and_a_planted_difference_exits_1(tmp_path):
    dump = utility_json(oracle_of(BIN))
    r = _inspect(dump, tmp_path)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr
    meta = json.loads(r.stdout)["meta"]
    assert meta["describes_this_binary"] and meta["disagreements"] == []
    assert meta["header"] == "CONTEXT_BINARY_INFO 3.0.0, header 0.1.0"
    assert meta["compared"] >= 150, meta["compared"]  # two graphs, 27 + 21 tensors, 13 blob fields each
    g = dump["info"]["graphs"][1]["info"]
    g["graphBlobInfo"]["info"]["vtcmSize"] = 4
    g["graphOutputs"][0]["info"]["dimensions"] = [1]
    dump["info"]["contextMetadata"]["info"]["dspArch"] = 79
    r = _inspect(dump, tmp_path)
    assert r.returncode == 1
    found = json.loads(r.stdout)["meta"]["disagreements"]
    assert len(found) == 3, found
    assert any("graphBlobInfo.vtcmSize" in d and "8388608 bytes (8 MB)" in d and "4 MB" in d for d in found)
    assert any(d.startswith("contextMetadata.dspArch: q9diff read 73, the dump says 79") for d in found)
    assert any(d.startswith("graphs[token_ar1_cl128_1_of_2].graphOutputs[") for d in found)


@needs_real
def test_the_written_dump_has_the_real_dumps_shape():
    # Every key written here is a key the real utility writes (same nesting, same names).
    written = _keys(utility_json(oracle_of(BIN)))
    for real in REAL_DUMPS:
        assert written <= _keys(json.loads(real.read_text())), real.name


@needs_real
@pytest.mark.parametrize("dump", REAL_DUMPS, ids=lambda p: p.name)
def test_a_real_dump_of_another_binary_is_said_to_be_one_in_one_line(dump, tmp_path):
    r = q9diff("inspect", "--meta", str(dump), str(BIN))
    assert r.returncode == 1, r.stderr
    lines = [x for x in r.stdout.splitlines() if x.startswith("meta")]
    assert len(lines) == 1 and "describes another binary" in lines[0], lines
    assert "graph names" in lines[0] and "contextBlobSize" in lines[0] and "buildId" in lines[0]
    r = q9diff("inspect", "--json", "--meta", str(dump), str(BIN))
    assert r.returncode == 1
    meta = json.loads(r.stdout)["meta"]
    assert not meta["describes_this_binary"] and meta["compared"] == 0 and len(meta["another_binary"]) == 3


@needs_real
@pytest.mark.parametrize("dump", REAL_DUMPS, ids=lambda p: p.name)
def test_every_key_of_a_real_dump_is_compared_or_declared_not_read(dump):
    # q9diff's view of a binary in the utility's shape predicts every key the real dump has, except the
    # ones it declares not read; and it predicts no key the utility does not write.
    real = _keys(json.loads(dump.read_text()))
    # The fixtures' I/O is float: a real QNN 2.29 binary with quantized I/O shows the scaleOffset keys.
    binaries = [ContextBinary.open(BIN)] + [cb for _, cb in contexts(locate(QUANTIZED_IO))]
    view = set().union(*(_keys(utility_view(cb)) for cb in binaries)) | {"header"}
    not_read = {k for k in real - view if any(x.split("[", 1)[0] in NOT_READ for x in k.split("."))}
    header = {k for k in real if k.startswith("header.")}
    assert real - view - not_read - header == set()
    every_real = set().union(*(_keys(json.loads(p.read_text())) for p in REAL_DUMPS))
    assert view - every_real == set()  # (the whisper encoder's float I/O has no scaleOffset)


def test_meta_that_is_not_the_utilitys_json_is_one_line(tmp_path):
    for text in (
        "[1, 2]",
        '{"info": []}',
        "[" * 100000,
        "not json",
        '{"info": {"socModel": 1}}',
        '{"header": {"artifact_type": "PROFILE"}, "info": {"buildId": "x"}}',
    ):
        path = tmp_path / "meta.json"
        path.write_text(text)
        r = q9diff("inspect", "--meta", str(path), str(BIN))
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert "Traceback" not in r.stderr
