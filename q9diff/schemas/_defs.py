"""The definitions several schema documents hold (an inspected binary, a cause, a fix row, a load verdict,
a device), written with the builders of q9diff.schemas._nodes.

Only `q9diff.schemas.make` imports this module, to write the schema files; reading a schema
(`q9diff.schemas.schema`) never does. The closed sets (cause names and roles, attribution buckets, region
kinds, load rules and verdicts) are taken from the code that writes them, so a set that grows makes the
committed files differ from what `make` writes, and tests/test_schemas.py says so.
"""

from __future__ import annotations

from q9diff.compare.attribution import DEFAULT_BUCKET, KIND_BUCKETS, MOVED_BUCKET
from q9diff.compare.rules import FIX_TARGETS
from q9diff.compare.rules import RULES as CAUSE_RULES
from q9diff.compare.summary import OPTION_RECORDS
from q9diff.load.rules import ORDER as LOAD_VERDICTS
from q9diff.load.rules import RULES as LOAD_RULES
from q9diff.schemas._nodes import (
    anything,
    array,
    boolean,
    const,
    integer,
    mapping,
    maybe,
    number,
    obj,
    ref,
    size,
    string,
    strings,
    words,
)

# What a set diff adds to the rules' causes: one model's body differs (graph_structure, also a rule) and
# a different number of parts (split).
CAUSE_NAMES = sorted(
    {r.name for r in CAUSE_RULES} | {"graph_structure", "split", "soc_set", "compiler_option"}
)
CAUSE_ROLES = ("root", "effect", "model", "unexplained")
BUCKETS = sorted(set(KIND_BUCKETS.values()) | {DEFAULT_BUCKET, MOVED_BUCKET})


def _tensor() -> dict:
    return obj(
        "A graph input or output as the file records it.",
        {
            "name": string("The tensor's name."),
            "dtype": string(
                "Its QNN data type's name (FLOAT_32, UFIXED_POINT_16, ...), or the type's number in hex "
                "(0x....) where QNN's table names none."
            ),
            "dims": array(size("One dimension."), "Its shape, outermost dimension first."),
            "scale": maybe(number("The quantization scale; null when the tensor records none.")),
            "offset": maybe(integer("The quantization offset; null when the tensor records none.")),
        },
    )


def _graph() -> dict:
    blob = "graphBlobInfo field; null when the file does not record it (`unknown` says why)."
    return obj(
        "One graph of the context binary: its inputs and outputs, what its graphBlobInfo records, the "
        "compiler options it was built with, and its op list.",
        {
            "name": string("The graph's name."),
            "inputs": array(ref("tensor"), "The graph's inputs, in the order the file lists them."),
            "outputs": array(ref("tensor"), "The graph's outputs, in the order the file lists them."),
            "spill_fill_buffer_size": maybe(size(f"Spill-fill buffer size in bytes: a {blob}")),
            "vtcm_size": maybe(size(f"VTCM the graph uses, in bytes: a {blob}")),
            "optimization_level": maybe(
                size(f"The optimization level recorded (0 also means not set on some versions): a {blob}")
            ),
            "htp_dlbc": maybe(size(f"Whether DLBC is on (0 or 1): a {blob}")),
            "num_hvx_threads": maybe(size(f"HVX threads recorded: a {blob}")),
            "io_tensor_size": maybe(size(f"Bytes of I/O tensors: a {blob}")),
            "op_data_size": maybe(size(f"Bytes of op data: a {blob}")),
            "const_size": maybe(size(f"Bytes of constant data (weights): a {blob}")),
            "ddr_tensor_size": maybe(size(f"Bytes of tensors held in DDR: a {blob}")),
            "shared_weights_size": maybe(size(f"Bytes of weights shared between graphs: a {blob}")),
            "options": mapping(
                {"type": "string"},
                "The compiler's options string, decoded into key and value (values kept as text, as the "
                "compiler wrote them, with its defaults filled in).",
            ),
            "options_vs_recorded": array(
                obj(
                    "An option whose value differs from what the file records for the same setting.",
                    {
                        "option": string("The option's key (vtcm_size, vtcm_mb, hvx_threads, O, arch, ...)."),
                        "asked": string("The option's value, as text."),
                        "field": words(
                            dict.fromkeys(field for _, field, _ in OPTION_RECORDS),
                            "The recorded field it is compared with.",
                        ),
                        "recorded": integer("The recorded value (bytes for vtcm_size)."),
                    },
                ),
                "Options that disagree with the recorded values; both are shown, since the file does not "
                "say which one the compiled graph follows. Empty when they agree.",
            ),
            "ops": strings("The HTP kernel name of every op, in schedule order."),
        },
    )


def _soc_target() -> dict:
    return obj(
        "Which SoC the build was made for: the soc_model recorded and the one the build asked for, with "
        "the evidence.",
        {
            "soc_model_recorded": maybe(
                size("The metadata's socModel; null when the file has no such field.")
            ),
            "soc_model_requested": maybe(
                size(
                    "The soc_model the build asked for: the recorded one, or 0 where the file shows the "
                    "compiler's stand-in SoC of a generic build; null when that cannot be told."
                )
            ),
            "generic_target": maybe(
                boolean(
                    "True when the build asked for soc_model 0, the generic target; false when it asked for "
                    "another; null when that cannot be told (a QAIRT whose generic builds were not measured)."
                )
            ),
            "rule": words(
                ("metadata", "measured", "not measured", "no version"),
                "What decided soc_model_requested: the records alone; a rule measured on the build's QAIRT "
                "(scripts/measure_generic.py); no rule, that QAIRT's generic builds were not measured; no "
                "QAIRT version in the build id.",
            ),
            "evidence": strings("Sentences saying how the two values were read."),
        },
        optional=("rule",),
    )


def _packing() -> dict:
    return obj(
        "What the binary says about packing its 4-bit weights, when it holds weights in the 4-bit range "
        "stored one per byte (or packing was asked and had no effect).",
        {
            "kind": words(
                ("not_packed", "int4_unpacked", "packing_had_no_effect"),
                "not_packed: weights packing was off; int4_unpacked: native_hmx_a16w4 kept INT4 weights "
                "one per byte; packing_had_no_effect: packing was on and saved nothing.",
            ),
            "four_bit_bytes": size(
                "Bytes of the weight pools holding 4-bit values one per byte (estimated)."
            ),
            "would_save": maybe(size("Bytes packing would save; null when no saving is promised.")),
            "compress_weights": maybe(string("The compress_weights option as written; null when absent.")),
            "native_hmx_a16w4": maybe(string("The native_hmx_a16w4 option as written; null when absent.")),
            "message": string("The sentence a user reads about it."),
        },
    )


def _meta() -> dict:
    return obj(
        "A qnn-context-binary-utility JSON dump (inspect --meta) judged against this binary.",
        {
            "header": string("The dump's header: artifact type and versions."),
            "describes_this_binary": boolean("False when the dump's identity fields name another binary."),
            "another_binary": strings("The identity fields that differ (then nothing else is compared)."),
            "disagreements": strings("Every compared field whose value differs, as a sentence."),
            "compared": size("How many fields were compared."),
            "not_compared": strings("Each dump field q9diff does not read, with the reason."),
        },
    )


def summary_properties() -> dict:
    """The fields of `q9diff.inspect/1`: one context binary."""
    return {
        "schema": const("q9diff.inspect/1", "The schema id of this object."),
        "path": string("The file read; FILE#NAME for one context inside a file that holds several."),
        "size": size("Bytes of the context binary."),
        "build_id": string("The QAIRT build id the metadata records (e.g. v2.51.0.…); empty when none."),
        "core_api_version": maybe(
            string("The QNN core API version, major.minor.patch; null if not recorded.")
        ),
        "backend_api_version": maybe(
            string("The HTP backend API version, major.minor.patch; null if not recorded.")
        ),
        "context_blob_version": maybe(string("The context blob version; null if not recorded.")),
        "soc_model": maybe(
            size("The socModel the metadata records (0 where it omits it); null where it has no field.")
        ),
        "dsp_arch": maybe(size("The Hexagon arch recorded (73 for v73); null when not recorded.")),
        "target": ref("soc_target", "Which SoC the build was made for."),
        "unknown": mapping(
            {"type": "string"},
            "Every reported field the file does not record, keyed by its name (graphs[NAME].FIELD for a "
            "graph's), with the reason.",
        ),
        "records": array(
            obj(
                "One entry of the blob's record directory.",
                {
                    "name": string("The record's name (ROOT, PICKLE/n/GRAPH, WEIGHTS/n)."),
                    "offset": size("Its offset in the file, in bytes."),
                    "size": size("Its size in bytes."),
                    "align": size("Its alignment in bytes."),
                },
            ),
            "The record directory (walked from the pickles for blobs that have none).",
        ),
        "graphs": array(ref("graph"), "The graphs of the context, in the order the file lists them."),
        "regions": array(
            obj(
                "A named byte range.",
                {
                    "name": string("The region's path, e.g. PICKLE[0]/inner/const_pool."),
                    "offset": size("Its offset in the file, in bytes."),
                    "size": size("Its size in bytes."),
                },
            ),
            "Every byte of the file in exactly one region.",
        ),
        "packing": maybe(ref("packing", "What the binary says about packing its weights; null: nothing.")),
        "oracle_disagreements": strings(
            "inspect --oracle only: where libQnnSystem's reading of the file differs from q9diff's."
        ),
        "meta": ref("meta", "inspect --meta only: the dump given, judged."),
        "meta_disagreements": strings("inspect --meta only: each disagreement as a line."),
        "container": ref("container", "inspect of an ExecuTorch .pte of one context: the file around it."),
    }


SUMMARY_OPTIONAL = ("packing", "oracle_disagreements", "meta", "meta_disagreements", "container")
SUMMARY = (
    "One context binary as q9diff reads it: build, versions, target SoC, graphs with their settings "
    "and op lists, the record directory, and every byte's region."
)


def _cause() -> dict:
    return obj(
        "A setting or effect that differs between the candidate (a) and what it is compared with (b): the "
        "reference build, or the device named with --target.",
        {
            "name": words(CAUSE_NAMES, "Which setting or effect."),
            "role": words(
                CAUSE_ROLES,
                "root: a setting to change; effect: a consequence of the roots; model: it comes with the "
                "model itself (the two sides are builds of different models); unexplained: it differs and "
                "no setting q9diff reads explains it (a compiler option, the schedule).",
            ),
            "option": string("compiler_option only: the compiler option that differs."),
            "a": anything(
                "The candidate's value: a number, a string, a list with one value per graph, or "
                "an object (compiler_options: each option that differs)."
            ),  # fmt: skip
            "b": anything("The value on the other side, in the same form as `a`."),
            "bytes": maybe(size("Changed bytes this cause accounts for; null where none are attributed.")),
            "size_delta": maybe(
                integer("Effects that carry an attribution row only: that row's size delta, b minus a.")
            ),
            "evidence": strings("Sentences saying how the difference was found and what it means."),
            "ort_options": maybe(
                obj(
                    "soc_set only: the ONNX Runtime QNN EP provider options that build caches for the "
                    "reference's SoCs, as its caches' metadata names them; null where a cache's does not.",
                    {
                        "soc_model": string("The reference's soc_models, comma-separated."),
                        "htp_arch": string("Their HTP arches, in the same order."),
                    },
                )
            ),
        },
        optional=("size_delta", "option", "ort_options"),
    )


def _suggestion() -> dict:
    return obj(
        "One change that makes the candidate's build match: the setting, its value, and where to set it in "
        "each tool.",
        {
            "setting": words(list(FIX_TARGETS), "The root cause it fixes."),
            "value": anything("The value to set, in the unit the configuration takes (VTCM in MiB)."),
            "unit": string("The unit of `value`, where it has one (MiB)."),
            "graphs": strings("A per-graph setting: the candidate's graphs it must be set on."),
            "targets": obj(
                "Where to set it.",
                {
                    "qairt": string("The qairt Python API line."),
                    "htp_backend_ext_config": mapping(
                        {}, "JSON path in htp_backend_ext_config.json, and the value to write there."
                    ),
                    "ort_qnn": mapping(
                        {"type": "string"},
                        "ONNX Runtime QNN EP provider option and its value, where one exists.",
                    ),
                    "qnn_cli": string("How to pass it to the qnn command-line tools."),
                },
                optional=("ort_qnn",),
            ),
        },
        optional=("unit", "graphs"),
    )


def _runtime() -> dict:
    return obj(
        "The QAIRT runtime a load verdict is for.",
        {
            "qairt": string("Its QAIRT version, major.minor or major.minor.patch."),
            "source": string("Where it came from: `--runtime TEXT` or the runtime library read."),
            "backend_api": maybe(
                string("The HTP backend API it loads up to, major.minor; null: not measured.")
            ),
            "backend_api_evidence": string("How the backend API version is known."),
        },
    )


def _load_finding() -> dict:
    verdict = words(LOAD_VERDICTS, "This rule's verdict.")
    return obj(
        "One load rule that fired for this part.",
        {
            "rule": words([r.id for r in LOAD_RULES], "The rule's id (q9diff/load/rules.py)."),
            "verdict": verdict,
            "decides": string("The binary's field that decides it."),
            "evidence": string("The values compared, and how the rule is known (measured or documented)."),
            "error": maybe(string("What the runtime prints when it refuses the binary; null: nothing.")),
            "code": maybe(integer("The error number it returns, where known.")),
            "fix": maybe(string("How to make the binary load or run as it should.")),
            "emulator": boolean("Whether the x86 HTP emulator shows it (else only a device does)."),
        },
    )


def _load() -> dict:
    verdict = "will not load (the runtime refuses it), loads, recompile advised, or loads"
    device = maybe(string("The --target device's name; null when no device was named."))
    runtime = maybe(ref("runtime", "The runtime judged for; null when none was named."))
    return obj(
        "Will each part load on the runtime (--runtime) and device (--target) named.",
        {
            "verdict": words(LOAD_VERDICTS, f"The worst part's verdict: {verdict}."),
            "runtime": runtime,
            "device": device,
            "parts": array(
                obj(
                    "One part's verdict.",
                    {
                        "part": string("The part's file name."),
                        "verdict": words(LOAD_VERDICTS, "The worst of its findings; loads when none fired."),
                        "findings": array(ref("load_finding"), "The rules that fired, in rule order."),
                        "not_judged": strings("Rules whose inputs are not read, each with the reason."),
                        "runtime": runtime,
                        "device": device,
                    },
                ),
                "One verdict per part of the candidate.",
            ),
        },
    )


def device_properties() -> dict:
    measured = obj(
        "What QAIRT's compiler recorded for this soc_model asked alone (scripts/measure_socs.py).",
        {
            "soc_model": size("The soc_model asked."),
            "soc_type": maybe(string("The compiler's name for the SoC (options soc_type).")),
            "dsp_arch": maybe(size("The dspArch the metadata recorded.")),
            "arch": maybe(size("The arch it compiled for (options arch).")),
            "default_vtcm_size": maybe(size("The VTCM recorded, in bytes, when none is asked.")),
            "modelled_vtcm_size": maybe(size("The VTCM of the compiler's own model of the SoC, in bytes.")),
            "hvx_threads": maybe(size("The options' hvx_threads.")),
            "error": maybe(string("Why the compiler built nothing for this soc_model; null when it did.")),
        },
    )
    return {
        "name": string("The device's name as q9diff knows it."),
        "soc_model": size("The soc_model a build for it sets."),
        "also": array(size("A soc_model id."), "Other soc_model ids a build for it may carry."),
        "dsp_arch": maybe(size("Its Hexagon arch; null when no source says.")),
        "vtcm_mb": maybe(size("Its VTCM in MiB, from documented sources only; null when none says.")),
        "part": maybe(string("The SoC table's name for its soc_model.")),
        "sources": mapping({"type": "string"}, "Where the device's facts come from, by source key."),
        "note": maybe(string("A remark on the device (e.g. which other ids its builds carry).")),
        "measured": maybe(measured),
    }


def _profile() -> dict:
    return obj(
        "How AI Hub builds for the device: the profile a --target judges against.",
        {
            "sentence": string("The profile as one sentence for this device."),
            "sources": mapping(
                {"type": "string"}, "Where each part of the profile comes from, by source key."
            ),
        },
    )


DEFS = {
    "tensor": _tensor,
    "graph": _graph,
    "soc_target": _soc_target,
    "packing": _packing,
    "meta": _meta,
    "summary": lambda: obj(SUMMARY, summary_properties(), optional=SUMMARY_OPTIONAL),
    "cause": _cause,
    "suggestion": _suggestion,
    "runtime": _runtime,
    "load_finding": _load_finding,
    "load": _load,
    "device": lambda: obj(
        "A device named with --target, as q9diff's tables describe it.", device_properties()
    ),
    "profile": _profile,
}
