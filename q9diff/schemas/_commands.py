"""The fields of the documents of the other commands: verify, explain, suggest, steps and inspect of a
file of several contexts."""

from __future__ import annotations

from q9diff.schemas._defs import (
    EARLIER,
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
from q9diff.verify.verdict import RUNNER_REACH

# ---------- verify ----------


def real(description: str) -> dict:
    """A float of verify's: a number, or one that is not finite written as a word."""
    words = "(not finite: the string inf, -inf or nan)"
    return {
        "anyOf": [{"type": "number"}, {"enum": ["inf", "-inf", "nan"]}],
        "description": f"{description} {words}",
    }


def metrics() -> dict:
    return obj(
        "How far one side's values are from the other's (the side taken as right).",
        {
            "max_abs": real("The largest absolute difference."),
            "rel": real("The relative error, ||a - b|| / ||b||."),
            "cosine": real("The cosine similarity."),
        },
    )


def verify_properties() -> dict:
    metrics = maybe(ref("metrics", "How far apart the two sides' values are; null when not compared."))
    llm = obj(
        "A split LLM decoded greedily by every side for N steps.",
        {
            "prompt": array({"type": "integer"}, "The prompt's token ids."),
            "tokens": mapping(array({"type": "integer"}, "Token ids."), "Each side's generated tokens."),
            "first_divergence": mapping(
                maybe({"type": "integer", "minimum": 0}),
                "For each pair of sides (candidate~reference, ...), the first step whose token differs; "
                "null when none does.",
            ),
            "steps": array(
                obj(
                    "One decoding step.",
                    {
                        "step": size("The step, from 0."),
                        "tokens": mapping({"type": "integer"}, "Each side's token at this step."),
                        "vs_cpu": mapping(
                            metrics, "Each binary side's logits vs the CPU's (teacher-forced)."
                        ),
                        "vs_reference": metrics
                        | {"description": "The candidate's logits vs the reference's."},
                    },
                ),
                "The drift per step.",
            ),
            "passed": boolean("True when the candidate's tokens never diverge from the judge's."),
            "texts": mapping({"type": "string"}, "Each side's answer as text (Genie bundles)." + EARLIER),
        },
        optional=("texts",),
    )
    verdict = obj(
        "The verdict as a user reads it, with what the run cannot show.",
        {
            "passed": boolean("The same as the top-level passed."),
            "runner": words(RUNNER_REACH, "Where the candidate ran."),
            "headline": string("The first line to read."),
            "caveats": strings("What the pass does not cover, each a sentence."),
            "reach": string("What this runner can and cannot show."),
            "generic_target_parts": strings("Candidate files built for soc_model 0 (the generic target)."),
            "next_command": maybe(string("A command that says more about the caveats; null when none.")),
            "status": words(("PASS", "FAIL"), "passed, as a word."),
        },
    )
    return {
        "schema": const("q9diff.verify/1", "The schema id of this object."),
        "passed": boolean("True when the candidate computes what the judge (reference or CPU) does."),
        "verdict": verdict,
        "sides": array(
            obj(
                "One side of the comparison.",
                {
                    "label": words(("candidate", "reference", "cpu", "emulator"), "Which side."),
                    "source": string("What it ran: a file, folder, bundle or recipe."),
                    "runner": string("What ran it (local, genie, an ssh:// runner, onnxruntime CPU)."),
                    "notes": strings("What its runner noted (e.g. a rebuild it ran instead)."),
                },
            ),
            "The sides that ran.",
        ),
        "notes": strings("Notes on the whole run."),
        "outputs": array(
            obj(
                "One output of one graph compared (single graphs).",
                {
                    "graph": string("The candidate graph's name."),
                    "output": string("The output's name."),
                    "against": words(("reference", "cpu"), "The side it is compared with."),
                    "metrics": metrics,
                    "passed": boolean("Whether it is within the tolerance."),
                },
            ),
            "Per-output comparisons; empty for an LLM.",
        ),
        "llm": maybe(llm),
        "tolerance": maybe(
            obj(
                "The tolerance given on the command line.",
                {
                    "min_cosine": real("Pass at this cosine or more."),
                    "max_rel": real("Pass at this relative error or less."),
                },  # fmt: skip
            )
        )
        | {"description": "The tolerance given; null: the defaults." + EARLIER},
        "targets": array(
            obj(
                "A candidate file and the soc_model its build asked for.",
                {"part": string("The file."), "soc_model": maybe(size("null: not recorded or not read."))},
            ),
            "Each candidate file with its target SoC, which the verdict's caveats need." + EARLIER,
        ),
    }


# ---------- explain, suggest, steps, inspect-set ----------


def explain_properties() -> dict:
    cause = obj(
        "A known cause, with how it is known.",
        {
            "cause": string("The cause."),
            "evidence": words(("measured", "documented", "reported"), "How it is known."),
            "source": string("Where: a measurement, a header, a public thread."),
            "check": maybe(string("The q9diff command that tells whether it applies; null when none can.")),
        },
    )
    causes = array(cause, "The known causes.")
    message = obj(
        "A log line a runtime prints, found in the query.",
        {
            "text": string("The line as the library prints it."),
            "library": string("The library that prints it."),
            "versions": strings("QAIRT versions whose library holds the text; empty: only logs show it."),
            "meaning": string("What it means."),
            "codes": array({"type": "integer"}, "Error numbers it ends with."),
            "causes": causes,
            "source": string("Where the line is known from."),
        },
    )
    code = obj(
        "An error value as one header names it.",
        {
            "value": integer("The error number."),
            "hex": string("The value in hex (0x...); empty for a negative value."),
            "name": string("Its C name."),
            "api": string("The API whose header names it (context, graph, ... or genie)."),
            "source": string("The header."),
            "meaning": string("What it means."),
            "alias_of": maybe(string("The name it is another name of, where it is one.")),
            "causes": causes,
        },
    )
    return {
        "schema": const("q9diff.explain/1", "The schema id of this object."),
        "query": string("What was asked."),
        "messages": array(message, "The log lines found in the query."),
        "codes": array(code, "The error values the query names (as a number, hex or C name)."),
    }


def suggest_properties() -> dict:
    recompile = obj(
        "--recompile: the rebuild from the fixed recipe, compared again.",
        {
            "out": string("The folder written."),
            "recipe": string("The recipe written there."),
            "built": strings("The rebuilt binaries."),
            "identical": boolean(
                "With a reference: the rebuilt binaries are byte-identical to it; with --target: every "
                "setting the device determines is as AI Hub builds for it."
            ),
            "roots_left": strings("The root causes still found."),
            "a_total": size("With a reference: bytes of the rebuilt parts."),
            "b_total": size("With a reference: bytes of the reference's parts."),
            "target": string("With --target: the device's name."),
        },
        optional=("a_total", "b_total", "target"),
    )
    recompile["anyOf"] = [{"required": ["a_total", "b_total"]}, {"required": ["target"]}]
    edit = obj(
        "One file --apply fixes.",
        {
            "path": string("The file."),
            "diff": string("The change as a unified diff; empty when the file already matches."),
            "advice_only": boolean("True when the file cannot carry the change and only advice is given."),
            "backup": maybe(string("Where the original was kept; null with --dry-run or nothing written.")),
        },
    )
    return {
        "schema": const("q9diff.suggest/1", "The schema id of this object."),
        "candidate": string("The candidate given."),
        "reference": maybe(string("The reference given; null with --target alone.")),
        "target": string("--target given: the device's name."),
        "identical": boolean("True when there is nothing to change (before any edit)."),
        "suggestions": array(ref("suggestion"), "The changes."),
        "edits": array(edit, "--apply: the edits planned (and, without --dry-run, made)."),
        "dry_run": boolean("True with --dry-run: nothing was written."),
        "recompile": maybe(recompile),
    }


def steps_properties() -> dict:
    step = obj(
        "One rebuild: the candidate's recipe with the settings so far.",
        {
            "added": strings("The settings this step adds; empty for the candidate's own build."),
            "label": string("The settings added with their values (e.g. vtcm_size=8); empty for the first."),
            "settings": mapping({}, "The recipe settings changed so far, by recipe field."),
            "size": size("Bytes of the step's build."),
            "delta_vs_reference": integer("The step's bytes minus the reference's."),
            "delta_vs_reference_percent": maybe(number("The delta as a percentage of the reference's size.")),
            "changed_vs_reference": size("Bytes that differ from the reference."),
            "moved": size("Of those, bytes whose content is elsewhere in the reference."),
            "new": size("Of those, bytes whose content is not."),
            "identical_to": maybe(
                words(("candidate", "reference"), "The side the build is byte-identical to; null: neither.")
            ),
            "roots_left": strings("Root causes still found against the reference."),
            "binaries": string("The folder of the step's build (in q9diff's cache)."),
        },
    )
    return {
        "schema": const("q9diff.steps/1", "The schema id of this object."),
        "candidate": string("The candidate given."),
        "reference": string("The reference given."),
        "order": strings("The order the settings are added in."),
        "steps": array(step, "The first is the candidate's recipe as it is, the last the full fix."),
    }


def inspect_set_properties() -> dict:
    return {
        "schema": const("q9diff.inspect-set/1", "The schema id of this object."),
        "path": string("The file given."),
        "contexts": array(ref("summary"), "Each context binary the file holds, as q9diff.inspect/1."),
        "container": ref("container", "An ExecuTorch .pte: its own regions and delegates." + EARLIER),
    }


def toolchain() -> dict:
    """Which toolchain the candidate was built with, as its own files say (q9diff.inputs.toolchain_of)."""
    return obj(
        "The toolchain the fix leads with: the one the candidate's own files say it was built with.",
        {
            "form": words(
                ["executorch", "ort", "ext", "qairt"],
                "executorch for a .pte, ort for an EPContext "
                "model, ext beside an htp_backend_ext_config.json, else qairt.",
            ),
            "why": string("What said so."),
        },
    )


def container() -> dict:
    """What inspect says of the file around the contexts: an ExecuTorch .pte (q9diff.compare.container)."""
    from q9diff.format.pte import KINDS

    where = maybe(size("Its offset in the file; null for data kept inline in the program."))
    spec = obj(
        "The QnnExecuTorchOptions compile spec beside the delegate, as far as it reads (null where a table "
        "is absent; precision and the flags are the schema's defaults where the writer left them out).",
        {
            "size": size("Bytes of the options FlatBuffer."),
            "soc_model": maybe(integer("soc_info.soc_model (QcomChipset: the QNN soc_model number).")),
            "htp_arch": maybe(integer("soc_info.htp_info.htp_arch (75 for V75).")),
            "vtcm_mb": maybe(integer("soc_info.htp_info.vtcm_size_in_mb.")),
            "backend_type": maybe(integer("backend_options.backend_type (2: HTP).")),
            "precision": maybe(words(["quantized", "fp16"], "The HTP backend options' precision.")),
            "weight_sharing": maybe(boolean("The HTP backend options' use_weight_sharing.")),
            "dlbc": maybe(boolean("The HTP backend options' use_dlbc.")),
            "problem": maybe(string("Why the value is no options FlatBuffer q9diff reads; else null.")),
        },
    )
    delegate = obj(
        "One entry of a method's delegate list. QNN delegates carry their binary and compile spec.",
        {
            "method": string("The method (ExecutionPlan) that lists it."),
            "position": size("Its place in the method's list."),
            "number": size("Its number over the whole file: FILE.pte#NUMBER addresses its context."),
            "backend": string("The delegate's id: QnnBackend, XnnpackBackend, ..."),
            "location": words(["segment", "inline"], "Where its processed data is kept."),
            "index": size("The segment's or the inline data's index."),
            "payload_offset": where,
            "payload_size": maybe(size("Bytes of its payload; null for inline data.")),
            "context": maybe(string("The name of the context its binary is listed under; null if not QNN.")),
            "binary_offset": size("Where its context binary starts, after the 256-byte payload header."),
            "binary_size": size("Bytes of its context binary, as the payload header says."),
            "signature": integer("The payload header's signature (a build clock in ns)."),
            "compile_spec": maybe(spec | {"description": "Its qnn_compile_spec; null when it has none."}),
            "compile_spec_findings": strings(
                "Where the compile spec and the binary disagree, a sentence each."
            ),
        },
        optional=("binary_offset", "binary_size", "signature", "compile_spec", "compile_spec_findings"),
    )
    return obj(
        "An ExecuTorch .pte around the contexts: its sizes, every byte's region, every delegate.",
        {
            "kind": const("executorch", "The container's kind."),
            "path": string("The file read."),
            "size": size("Bytes of the file."),
            "program_size": size("Bytes of the Program FlatBuffer, from offset 0."),
            "segment_base_offset": size("Where the segments start; their offsets count from here."),
            "segment_data_size": size("Bytes of segment data from the base."),
            "segments": array(
                obj(
                    "A segment as placed in the file.",
                    {"offset": size("Its file offset."), "size": size("Bytes.")},
                ),
                "Every segment of the program, in order (the first is the empty constant segment).",
            ),
            "regions": array(
                obj(
                    "A named byte range of the file.",
                    {
                        "name": string("pte/header, pte/program, pte/segment[K]/qnn_header, ..."),
                        "offset": size("Its offset in the file."),
                        "size": size("Bytes."),
                        "kind": words(KINDS, "What it holds."),
                    },
                ),
                "Every byte of the file once, in file order: the sizes add up to the file's.",
            ),
            "delegates": array(delegate, "Every delegate of every method, in file order."),
            "notes": strings(
                "What the opener says beside the contexts (other backends' delegates, skipped)."
            ),
        },
    )
