"""`inspect --meta`: a qnn-context-binary-utility JSON in the shape the utility writes (keys of
QnnSystemContext.h; vtcmSize in MB under graphBlobInfo.info, dspArch under contextMetadata.info),
built here from libQnnSystem's own answer for a fixture, is compared field by field."""

from __future__ import annotations

import json

from conftest import FIXTURES, oracle_of
from conftest import q9diff_cli as q9diff

BIN = FIXTURES / "qwen-mini" / "reference" / "part_1_of_2.bin"


def _tensor(t: dict) -> dict:
    info = {
        "id": t["id"],
        "name": t["name"],
        "dataType": f"QNN_DATATYPE_{t['dtype']}",
        "dimensions": t["dims"],
    }
    if t["scale"] is not None:
        info["quantizeParams"] = {
            "definition": "QNN_DEFINITION_DEFINED",
            "quantizationEncoding": "QNN_QUANTIZATION_ENCODING_SCALE_OFFSET",
            "scaleOffset": {"scale": t["scale"], "offset": t["offset"]},
        }
    return {"info": info}


def utility_json(o: dict) -> dict:
    """What qnn-context-binary-utility prints for the BinaryInfo libQnnSystem returned."""
    major, minor, patch = (int(x) for x in o["context_blob_version"].split("."))
    return {
        "info": {
            "backendId": o["backend_id"],
            "buildId": o["build_id"],
            "contextBlobVersion": {"major": major, "minor": minor, "patch": patch},
            "contextBlobSize": o["context_blob_size"],
            "socModel": o["soc_model"],
            "contextMetadata": {"info": {"dspArch": o["dsp_arch"]}},
            "numGraphs": len(o["graphs"]),
            "graphs": [
                {
                    "info": {
                        "graphName": g["name"],
                        "graphInputs": [_tensor(t) for t in g["inputs"]],
                        "graphOutputs": [_tensor(t) for t in g["outputs"]],
                        "graphBlobInfo": {
                            "info": {
                                "spillFillBufferSize": g["spill_fill_buffer_size"],
                                "vtcmSize": g["vtcm_size"] // (1024 * 1024),
                                "optimizationLevel": g["optimization_level"],
                                "htpDlbc": g["htp_dlbc"],
                                "numHvxThreads": g["num_hvx_threads"],
                            }
                        },
                        "graphBlobInfoV2": {
                            "ioTensorSize": g["io_tensor_size"],
                            "opDataSize": g["op_data_size"],
                            "constSize": g["const_size"],
                            "ddrTensorSize": g["ddr_tensor_size"],
                            "sharedWeightsSize": g["shared_weights_size"],
                        },
                    }
                }
                for g in o["graphs"]
            ],
        }
    }


def test_meta_agrees_field_by_field_and_flags_a_planted_difference(tmp_path):
    meta = utility_json(oracle_of(BIN))
    path = tmp_path / "meta.json"
    path.write_text(json.dumps(meta))
    r = q9diff("inspect", "--json", "--meta", str(path), str(BIN))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["meta_disagreements"] == []
    g = meta["info"]["graphs"][1]["info"]
    g["graphBlobInfo"]["info"]["vtcmSize"] = 4
    g["graphOutputs"][0]["info"]["dimensions"] = [1]
    meta["info"]["contextMetadata"]["info"]["dspArch"] = 79
    path.write_text(json.dumps(meta))
    found = json.loads(q9diff("inspect", "--json", "--meta", str(path), str(BIN)).stdout)[
        "meta_disagreements"
    ]
    assert len(found) == 3, found
    assert any("vtcm_size" in d and "4194304" in d for d in found)
    assert any(d.startswith("dsp_arch") for d in found)


def test_meta_that_is_not_the_utilitys_json_is_one_line(tmp_path):
    for text in ("[1, 2]", '{"info": []}', "[" * 100000, "not json"):
        path = tmp_path / "meta.json"
        path.write_text(text)
        r = q9diff("inspect", "--meta", str(path), str(BIN))
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert "Traceback" not in r.stderr
