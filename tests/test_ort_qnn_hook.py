"""The ort-qnn backend builds what users build: graph names, weights packing and compiler options go to
Qualcomm's compiler through libQnnHtp.so's interface table, and the compile child reads the binary back
and fails, in one line, when it does not say what was asked."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace

import pytest
from conftest import FIXTURES

from q9diff.backends.ort_qnn import OrtQnnBackend
from q9diff.read.binary import ContextBinary
from q9diff.recipes import recipe as rcp

pytest.importorskip("onnxruntime_qnn")


def _mlp_recipe(tmp_path, **settings) -> rcp.Recipe:
    shutil.copy(FIXTURES / "variants" / "models" / "mlp.onnx", tmp_path / "mlp.onnx")
    part = rcp.Part("p", "p.bin", (rcp.GraphSource("prompt_ar16_cl4096_1_of_1", "mlp.onnx"),))
    base = rcp.Settings(soc_model=77, dsp_arch="v73", vtcm_mb=8, optimization_level=3)
    return rcp.Recipe("ort-qnn", (part,), replace(base, **settings), path=tmp_path / "recipe.json")


def test_graph_names_packing_and_finalize_options_reach_the_binary(tmp_path):
    recipe = _mlp_recipe(tmp_path, weights_packing=True, finalize_options={"native_hmx_a16w4": False})
    backend = OrtQnnBackend()
    [out] = backend.compile(recipe, tmp_path / "out")
    cb = ContextBinary.open(out)
    assert [g.name for g in cb.graphs] == ["prompt_ar16_cl4096_1_of_1"]
    assert backend.compiled[0].graph_names == ("prompt_ar16_cl4096_1_of_1",)
    assert cb.options(0)["compress_weights"] == "true"
    assert cb.options(0)["native_hmx_a16w4"] == "false"


def test_self_check_fails_a_build_whose_options_lack_the_packing(tmp_path):
    """On v68 the compiler drops the weights-packing request silently (QNN_FACTS); the build must fail."""
    recipe = _mlp_recipe(tmp_path, soc_model=0, dsp_arch="v68", weights_packing=True)
    with pytest.raises(RuntimeError) as err:
        OrtQnnBackend().compile(recipe, tmp_path / "out")
    message = str(err.value)
    assert "\n" not in message
    assert "weights_packing = true asked" in message and "compress_weights=false" in message
    assert "it does not pack weights for v68" in message
    assert not list((tmp_path / "out").rglob("*.bin"))


def test_self_check_fails_a_compiler_option_the_compiler_ignores(tmp_path):
    recipe = _mlp_recipe(tmp_path, finalize_options={"no_such_compiler_option": True})
    with pytest.raises(RuntimeError, match="have no no_such_compiler_option"):
        OrtQnnBackend().compile(recipe, tmp_path / "out")


def test_schema_1_recipes_still_read_and_keep_the_names_onnx_runtime_chose(tmp_path):
    data = _mlp_recipe(tmp_path).to_dict() | {"schema": "q9diff.recipe/1"}
    (tmp_path / "recipe.json").write_text(json.dumps(data))
    old = rcp.load(tmp_path / "recipe.json")
    assert old.ep_graph_names
    again = json.loads(rcp.dump(old))
    assert again["schema"] == "q9diff.recipe/2" and again["ep_graph_names"] is True
    [out] = OrtQnnBackend().compile(old, tmp_path / "out")
    assert ContextBinary.open(out).graphs[0].name.startswith("QNNExecutionProvider_")


def test_the_compile_child_reports_what_it_was_made_with_and_the_recipe_keeps_it(tmp_path):
    from importlib import metadata

    from q9diff.backends.ort_qnn import MADE_WITH
    from q9diff.backends.registry import build_key

    backend = OrtQnnBackend()
    backend.compile(_mlp_recipe(tmp_path), tmp_path / "out")
    made = backend.compiled[0].made_with
    assert made == {p: metadata.version(p) for p in MADE_WITH}
    recipe = replace(_mlp_recipe(tmp_path), made_with=made)
    data = json.loads(rcp.dump(recipe))
    assert data["schema"] == "q9diff.recipe/2" and data["made_with"] == made
    assert dict(rcp.Recipe.from_dict(data, "r.json").made_with) == made
    # recipes without it (every /1 recipe, /2 ones written before it) load and are written without it
    assert "made_with" not in json.loads(rcp.dump(_mlp_recipe(tmp_path)))
    assert build_key(recipe) == build_key(_mlp_recipe(tmp_path))  # a record of a build, not a setting
    with pytest.raises(rcp.RecipeError, match="expected made_with to be an object of package: version"):
        rcp.Recipe.from_dict(data | {"made_with": {"onnx": 1}}, "r.json")


def test_recipe_refuses_option_values_the_compiler_cannot_take(tmp_path):
    data = _mlp_recipe(tmp_path).to_dict()
    data["settings"]["finalize_options"] = {"compress_weights": "yes"}
    with pytest.raises(rcp.RecipeError, match="finalize option 'compress_weights'"):
        rcp.Recipe.from_dict(data, "r.json")
    data["settings"]["finalize_options"] = {"compress_weights": True}
    settings = rcp.Recipe.from_dict(data, "r.json").settings
    assert settings.finalize_options == (("compress_weights", True),)
    assert json.loads(rcp.dump(rcp.Recipe.from_dict(data, "r.json")))["settings"]["finalize_options"] == {
        "compress_weights": True
    }


def test_a_table_that_cannot_be_patched_is_one_line(tmp_path):
    from q9diff.backends import htp_graph_hook

    with pytest.raises(htp_graph_hook.HookError) as err:
        htp_graph_hook.install(str(tmp_path / "libQnnHtp.so"), ("g",), True)
    assert "\n" not in str(err.value) and "QnnInterface_getProviders" in str(err.value)
