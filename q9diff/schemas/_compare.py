"""The fields of the documents that compare builds: diff, set diff, --target and doctor."""

from __future__ import annotations

from q9diff.compare.attribution import KIND_BUCKETS
from q9diff.compare.toolchains import FORMS
from q9diff.doctor.result import HYPOTHESES, SEVERITIES
from q9diff.doctor.run import RULES as DOCTOR_RULES
from q9diff.load.rules import RULES as LOAD_RULES
from q9diff.read.model import KINDS
from q9diff.schemas._defs import BUCKETS, DEFS, device_properties
from q9diff.schemas._nodes import (
    EARLIER,
    anything,
    array,
    boolean,
    const,
    integer,
    mapping,
    maybe,
    number,
    obj,
    per_graph,
    ref,
    size,
    string,
    strings,
    words,
)

# ---------- diff and set diff ----------

TOOLCHAIN_FORMS = [form for form, _ in FORMS] + ["all"]  # the forms a fix is written in, from their home


def fixing() -> dict:
    """What a fix is said in and what to run next (q9diff.api: diff, set diff and target)."""
    return {
        "toolchain": obj(
            "The toolchain form the fix leads with: the one the candidate's own files say it was built with, "
            "or --toolchain's." + EARLIER,
            {
                "form": {
                    "type": "string",
                    "enum": TOOLCHAIN_FORMS,
                    "description": "qairt (Python API), ext (backend extension JSON), ort (ONNX Runtime"
                    " QNN EP options), qnn-cli (qnn-context-binary-generator), executorch; all: every form.",
                },
                "why": string("What said so (the file beside the candidate, its kind, or --toolchain)."),
            },
        ),
        "next": string(
            "The command that applies the fix to the config file found beside the candidate (q9diff suggest "
            "... --apply FILE); absent where no config was found." + EARLIER
        ),
        "reference_looks_wrong": string(
            "Present when the reference looks like the broken build (a generic SoC, settings a user leaves "
            "unset): the arguments look swapped, so no fix is given (suggestions is empty)." + EARLIER
        ),
        "read_as": strings(
            "A folder that is both a folder of parts and a Genie bundle: what it was read as (its *.bin "
            "parts; doctor reads the bundle's ctx-bins)." + EARLIER
        ),
    }


FIXING = tuple(fixing())


def region_row() -> dict:
    return obj(
        "One region name over both files: its bytes on each side, and its changed bytes split into moved "
        "(the same content elsewhere in the other file's region) and new.",
        {
            "name": string("The region's name (a path such as PICKLE[0]/inner/const_pool)."),
            "kind": words(KINDS, "What the region holds, as the walker that named it knows."),
            "a_size": size("Bytes of the region in the candidate."),
            "b_size": size("Bytes of the region in the reference."),
            "delta": integer("b_size minus a_size."),
            "changed_bytes": size("Bytes that differ (a region present on one side only: all of them)."),
            "moved_bytes": size("Changed bytes whose content is elsewhere in the other file's region."),
            "new_bytes": size("Changed bytes whose content is not (changed_bytes minus moved_bytes)."),
            "moved_estimate": obj(
                "Present when moved_bytes of a large, mostly new region is estimated from a sample.",
                {
                    "blocks": size("Changed blocks of the region."),
                    "sampled_blocks": size("Blocks chosen by content and searched exactly."),
                    "found_blocks": size("Sampled blocks found elsewhere in the other file's region."),
                },
            ),
        },
        optional=("moved_estimate",),
    )


def attribution_row() -> dict:
    buckets = ", ".join(f"{b}" for b in sorted(set(KIND_BUCKETS.values())))
    return obj(
        "One bucket of the changed bytes: every changed byte and every byte of size delta is in exactly "
        "one row, so the rows add up to the totals.",
        {
            "bucket": words(
                BUCKETS, f"re_tiling: moved content; the region kinds' own buckets ({buckets}); the rest."
            ),
            "changed_bytes": size("Changed bytes in this bucket."),
            "size_delta": integer("Size delta in this bucket, reference minus candidate."),
            "estimated": {"const": True, "description": "Present (true) when the row holds an estimate."},
        },
        optional=("estimated",),
    )


def settings() -> dict:
    one = "One value when every graph agrees, else a list with one value per graph; null: not recorded."
    flag = maybe({"type": "boolean"})
    return obj(
        "One side's observed settings, as the report's settings table shows them.",
        {
            "soc_model": maybe(size("The soc_model the build asked for.")),
            "dsp_arch": maybe(size("The Hexagon arch recorded.")),
            "vtcm_size": per_graph(maybe({"type": "integer", "minimum": 0}), f"VTCM in bytes. {one}"),
            "optimization_level": per_graph(maybe({"type": "integer"}), f"Optimization level. {one}"),
            "num_hvx_threads": per_graph(maybe({"type": "integer"}), f"HVX threads recorded. {one}"),
            "htp_dlbc": per_graph(maybe({"type": "integer"}), f"DLBC. {one}"),
            "weight_sharing": boolean("Whether the context holds shared weights (WEIGHTS records)."),
            "compress_weights": per_graph(flag, f"The weights packing option. {one}"),
            "native_hmx_a16w4": per_graph(flag, f"The native_hmx_a16w4 option. {one}"),
            "io_dtypes": strings("The distinct data types of the graphs' inputs and outputs."),
            "precision": {
                "type": "array",
                "description": "What the compiled graphs compute in, from their tensor types: [the weights'"
                " element types, the activations' element types] (q9diff.compare.structure.precision).",
                "items": {"type": "array", "items": {"type": "string"}},
            },
            "num_graphs": size("How many graphs the context holds."),
            "build_id": string("The QAIRT build id."),
            "io_names": strings("The names of every graph input and output, sorted."),
            "soc_type": per_graph(maybe({"type": "string"}), f"The options' soc_type. {one}"),
            "spill_fill_buffer_size": per_graph(
                maybe({"type": "integer", "minimum": 0}), f"Spill-fill buffer bytes. {one}"
            ),
            "const_size": per_graph(maybe({"type": "integer", "minimum": 0}), f"Constant bytes. {one}"),
        },
    )


def diff_properties() -> dict:
    return {
        "schema": const("q9diff.diff/1", "The schema id of this object."),
        "a": ref("summary", "The candidate, as `q9diff inspect` reads it."),
        "b": ref("summary", "The reference, as `q9diff inspect` reads it."),
        "identical": boolean(
            "True when the two files are byte-identical; of containers (see outside), when the contexts "
            "compared are and the files do not differ outside them."
        ),
        "size_delta": integer("The reference's size minus the candidate's, in bytes."),
        "size_delta_percent": maybe(
            number("size_delta as a percentage of the candidate's size; null when that size is 0.")
        ),
        "regions": array(ref("region_row"), "Every region of both files (the rows add up to both sizes)."),
        "causes": array(ref("cause"), "What differs: root causes (settings) and their effects."),
        "suggestions": array(ref("suggestion"), "The changes that make the candidate's build match."),
        "unknown": array(
            obj(
                "A setting that could not be compared, because a file does not record it: never a cause.",
                {
                    "setting": string("The observed setting."),
                    "a": anything("The candidate's value (null or a list holding null where not recorded)."),
                    "b": anything("The reference's value, in the same form."),
                    "why": string("Which file does not record it, and why."),
                },
            ),
            "Settings not compared.",
        ),
        "attribution": array(ref("attribution_row"), "Where the changed bytes went, one row per bucket."),
        "weights_verdict": maybe(
            string("One sentence on the weights; null when no weight byte changed, or for different models.")
        ),
        "different_models": ref("different_models", "Present when the two are builds of different models."),
        "settings": obj(
            "Each side's observed settings, so a saved result draws its settings table without the files."
            + EARLIER,
            {"a": ref("settings", "The candidate's."), "b": ref("settings", "The reference's.")},
        ),
        "target": obj(
            "--target given beside the reference: the device named and why the reference is a build "
            "for another device (if it is).",
            {"name": string("The device's name."), "reference_findings": strings("One sentence per part.")},
        ),
        "load": maybe(
            ref(
                "load",
                "--runtime or --target given: will each part of the candidate load there. Absent when "
                "neither was given (q9diff report reads null as absent).",
            )
        ),
        "structure": obj(
            "What changed in the structure of the two builds: graphs, their I/O tensors (data type, shape, "
            "encoding), op kinds and counts, the compiled graph's tensor types, and the precision of weights "
            "and activations (q9diff.compare.structure)." + EARLIER,
            {
                "same": boolean("True when both sides' structures are equal (then nothing else is written)."),
                "changes": array(
                    obj(
                        "One change found.",
                        {
                            "path": {"type": "array", "description": "The keys down to the value."},
                            "kind": {
                                "type": "string",
                                "enum": ["added", "removed", "changed"],
                                "description": "What happened to the value.",
                            },
                            "a": anything("The candidate's value; null when added."),
                            "b": anything("The reference's value; null when removed."),
                        },
                    ),
                    "The first 200 changes, sorted by path (a list, such as a shape, is one value).",
                ),
                "left_out": integer("Changes (and sentences) found past the first 200, not listed."),
                "words": strings("The changes as sentences, grouped: precision, I/O, tensor types, ops."),
            },
            optional=("changes", "words", "left_out"),
        ),
        "outside": outside(),
    } | fixing()


def outside() -> dict:
    side = obj(
        "One side: the container (or the plain binary) and how many of its bytes were compared.",
        {
            "path": string("The file."),
            "size": size("Its bytes."),
            "compared_bytes": size("Its bytes compared: the contexts it carries (all of a plain binary)."),
        },
    )
    return obj(
        "Present when a side is a container (.pte, .tflite, .onnx) or one context of one: a diff compares "
        "the context binaries it carries, so this says what was compared and whether the files differ "
        "outside it (q9diff.compare.outside).",
        {
            "compared": string("What was compared, in words."),
            "a": side,
            "b": side,
            "contexts_identical": boolean("True when no byte of what was compared differs."),
            "differs": maybe(
                boolean(
                    "Whether the files differ outside what was compared; null where that was not "
                    "compared (a plain binary against a container, one context, or an EPContext model "
                    "whose contexts differ)."
                )
            ),
        },
    )


DIFF_OPTIONAL = ("different_models", "settings", "target", "load", "structure", "outside", *FIXING)


def different_models() -> dict:
    return obj(
        "Present when the two sides are builds of different models: settings stay causes, and what comes "
        "with the model (and every byte count) is no cause.",
        {
            "evidence": strings("Why they are builds of different models."),
            "byte_attribution": string("Why byte attribution is not given for them."),
        },
    )


def pair() -> dict:
    properties = {
        k: v for k, v in diff_properties().items() if k not in ("target", "load", "outside", *FIXING)
    }
    properties["part"] = string("The candidate part's file name.")
    return obj(
        "One pair of parts diffed: a q9diff.diff/1 object with the part's name (the set's --target and "
        "load are the set's own, not repeated per part).",
        properties,
        optional=("different_models", "settings", "structure"),
    )


def setdiff_properties() -> dict:
    diff = diff_properties()
    return {
        "schema": const("q9diff.setdiff/1", "The schema id of this object."),
        "identical": boolean("True when both sets hold the same parts, byte for byte."),
        "a_total": size("Bytes of every candidate part."),
        "b_total": size("Bytes of every reference part."),
        "size_delta": integer("b_total minus a_total."),
        "size_delta_percent": maybe(number("size_delta as a percentage of a_total; null when a_total is 0.")),
        "unpaired_a": strings("Candidate parts with no reference part to pair with."),
        "unpaired_b": strings("Reference parts with no candidate part to pair with."),
        "unpaired_sizes": obj(
            "The unpaired parts' sizes, in the order of unpaired_a and unpaired_b." + EARLIER,
            {
                "a": array({"type": "integer", "minimum": 0}, "Bytes."),
                "b": array({"type": "integer", "minimum": 0}, "Bytes."),
            },  # fmt: skip
        ),
        "causes": array(
            ref("cause"),
            "The parts' causes, each (name, a, b) once, in part order; a different number of parts is "
            "a root cause of its own (split).",
        ),
        "suggestions": array(
            ref("suggestion"), "The parts' fixes, each change once (a per-graph one over all their graphs)."
        ),
        "parts": array(ref("pair"), "Each pair of parts diffed."),
        "different_models": diff["different_models"],
        "target": diff["target"],
        "load": diff["load"],
        "outside": diff["outside"],
        "bundle": bundle(),
    } | fixing()


def bundle() -> dict:
    file = obj(
        "One file of either bundle beside the ctx-bins that differs or was not read.",
        {
            "file": string("Its name in the bundle (a config: the file the bundle names)."),
            "a": maybe(size("Its bytes in the candidate's bundle; null where absent or not read.")),
            "b": maybe(size("Its bytes in the reference's bundle; null where absent or not read.")),
            "differs": maybe(boolean("True when it differs (or is in one bundle only); null: not read.")),
            "why": string("How it differs, or why it was not read."),
        },
    )
    setting = obj(
        "One setting of a config that differs.",
        {
            "file": string("The config."),
            "key": string("Its key path, e.g. dialog.context.eos-token or devices[0].soc_model."),
            "a": anything("The candidate bundle's value (null: no such key; a container: its kind)."),
            "b": anything("The reference bundle's value, in the same form."),
        },
    )
    return obj(
        "Present when both sides are Genie bundles (or configs): every file beside the ctx-bins compared, "
        "the configs as settings (q9diff.compare.bundles); `outside` then says whether the bundles differ "
        "outside their ctx-bins, and the extension config's values a ctx-bin records too are root causes.",
        {
            "files": array(file, "Each file that differs, is in one bundle only, or was not read."),
            "settings": array(setting, "Each setting that differs (at most 200)."),
            "settings_left_out": size("Settings that differ beyond those listed."),
            "not_compared": size("Files past the 4096 of a bundle compared."),
        },
        optional=("not_compared",),
    )


# ---------- target ----------


def target_properties() -> dict:
    part = obj(
        "One part judged against the device.",
        {
            "part": string("The part's file name."),
            "a": ref("summary", "The part, as `q9diff inspect` reads it."),
            "matches": boolean("True when every setting the device determines is as AI Hub's builds use."),
            "causes": array(ref("cause"), "Each setting that is not (b: the device's value)."),
            "suggestions": array(ref("suggestion"), "The changes that fix them."),
            "errors": strings("What the device cannot run (e.g. more VTCM than it has)."),
            "settled": strings("Settings that are as the device's, each a sentence."),
            "unknown": strings("Settings not judged (not recorded, or no source documents the device's)."),
        },
    )
    return {
        "schema": const("q9diff.target/1", "The schema id of this object."),
        "target": ref("device", "The device named with --target."),
        "profile": ref("profile", "How AI Hub builds for the device."),
        "matches": boolean("True when every part matches."),
        "causes": array(ref("cause"), "The parts' causes, each (name, a, b) once."),
        "suggestions": array(ref("suggestion"), "The parts' fixes, each change once."),
        "errors": strings("The parts' errors, each once."),
        "needs_reference": strings("What only a diff against a reference build can show."),
        "parts": array(part, "One entry per part of the candidate."),
        "load": maybe(
            ref(
                "load",
                "Will each part load on the device (and the --runtime, if given). Absent in results saved "
                "before load verdicts were added (q9diff report reads null as absent).",
            )
        ),
    } | {k: v for k, v in fixing().items() if k in ("toolchain", "next")}


# ---------- doctor ----------


def doctor_properties() -> dict:
    checks = sorted({r.id for r in DOCTOR_RULES} | {r.id for r in LOAD_RULES})
    finding = obj(
        "One finding of one check.",
        {
            "check": words(checks, "The check's id."),
            "severity": words(
                SEVERITIES, "error and warning are problems; info is a note or a check passed."
            ),
            "hypothesis": maybe(
                {"type": "integer", "enum": list(HYPOTHESES), "description": "The hypothesis it answers."}
            ),
            "where": string("The file (and field) it is about."),
            "evidence": string("What was found."),
            "fix": maybe(string("How to fix it; null for a note.")),
        },
    )
    hypothesis = obj(
        "What the checks say about one hypothesis.",
        {
            "title": string("The hypothesis."),
            "status": words(("implicated", "ruled out", "open"), "implicated: a check found a problem."),
            "why": strings("The evidence behind the status."),
        },
    )
    hypotheses = mapping(hypothesis, "Each of the numbered hypotheses, keyed by its number.")
    hypotheses["required"] = [str(n) for n in HYPOTHESES]
    hypotheses["propertyNames"] = {"pattern": "^[1-9][0-9]*$"}
    device = device_properties() | {"label": string("The device as one line: name, soc_model, arch, VTCM.")}
    return {
        "schema": const("q9diff.doctor/1", "The schema id of this object."),
        "bundle": string("The bundle checked: its Genie config, or the folder or file given."),
        "reference": maybe(string("The reference bundle, or null when none was given.")),
        "findings": array(finding, "Every finding, errors first."),
        "hypotheses": hypotheses,
        "notes": strings("What doctor assumed or could not read while reading the bundle."),
        "passed": array(
            {"type": "integer", "minimum": 0},
            "Indices into findings of the checks that passed (ruled a hypothesis out)." + EARLIER,
        ),
        "target": obj("--target given: the device.", device),
        "profile": ref("profile", "How AI Hub builds for the device."),
        "runtime": ref(
            "runtime", "--runtime given, or the runtime the bundle ships: what loads were judged for."
        ),
    }


def load_properties() -> dict:
    """`q9diff.load/1`: the Python API's `will_load` result, the `load` object with its id and path."""
    return {
        "schema": const("q9diff.load/1", "The schema id of this object."),
        "path": string("The build judged, as it was named."),
        **DEFS["load"]()["properties"],
    }
