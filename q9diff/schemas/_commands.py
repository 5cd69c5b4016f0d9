"""The fields of the documents of the other commands: verify, explain, suggest, steps and inspect of a
file of several contexts."""

from __future__ import annotations

from q9diff.schemas._nodes import (
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
            "source": string("Where: a measurement, a header, a library, public threads (owner-repo#N)."),
            "check": maybe(string("The q9diff command that tells whether it applies; null when none can.")),
        },
    )
    causes = array(cause, "The known causes.")
    place = obj(
        "A library that holds the message, with its level there and the versions that hold it.",
        {
            "library": string("The library."),
            "level": string("E, W, I, V or D as the library writes it; empty where it writes none."),
            "versions": strings("The QAIRT versions (2.47-2.51), ExecuTorch version or FastRPC commit."),
        },
    )
    message = obj(
        "A message found in the query: in Qualcomm's or a framework's library (catalogue.json), or seen in "
        "logs of a runtime not catalogued.",
        {
            "text": string("The message's format string."),
            "library": string("The first library that prints it (or the runtime whose logs show it)."),
            "versions": strings("The versions of that library that hold it; empty: only logs show it."),
            "libraries": array(place, "Every catalogued library that holds it."),
            "layer": string("What failed when it is printed (library loading, FastRPC transport, ...)."),
            "meaning": string("What it means; empty where q9diff knows only that a library prints it."),
            "codes": array({"type": "integer"}, "Error numbers it usually ends with."),
            "causes": causes,
            "source": string("Where what q9diff says of it comes from."),
        },
    )
    code = obj(
        "An error value as one table names it.",
        {
            "value": integer("The error number (FastRPC: the offset; the DSP prints 0x80000400 + it)."),
            "hex": string("The value in hex as logs write it (0x...); empty for a negative value."),
            "name": string("Its C name."),
            "api": string("The QNN API whose header names it (context, graph, ...), genie, or fastrpc."),
            "source": string("The header."),
            "meaning": string("What it means."),
            "alias_of": maybe(string("The name it is another name of, where it is one.")),
            "causes": causes,
        },
    )
    ranked = obj(
        "A cause of the verdict, best first.",
        {
            "cause": string("The cause."),
            "evidence": words(("measured", "documented", "reported"), "How it is known."),
            "source": string("Where it is known from."),
            "check": maybe(string("The q9diff command that tells whether it applies; null when none can.")),
            "lines": array({"type": "integer"}, "The lines that point to it or name a code it goes with."),
            "pointed_to": boolean("A line of the log points to it (not only a code it usually goes with)."),
        },
    )
    verdict = obj(
        "The combined verdict over a pasted log.",
        {
            "line": maybe(integer("The decisive line (1-based); null when no line reads as an error.")),
            "layer": string("The layer that failed: the decisive line's."),
            "summary": string("The decisive line in a sentence."),
            "causes": array(ranked, "The likeliest causes, the ones the lines point to first."),
            "undecided": string(
                "What tells the leading causes apart when no line does; empty when one does."
            ),
            "checks": strings("The q9diff commands that tell which cause applies."),
            "unknown_error_lines": array({"type": "integer"}, "Error lines q9diff does not know."),
            "class": string(
                "The failure class of the first cause (packaging, version_skew, device_mismatch, resources, "
                "op_support, compiler_defect, config, asset, follow_on); empty when no cause is given."
            ),
            "benign_lines": array({"type": "integer"}, "Lines whose words say nothing went wrong."),
            "collect": strings("What to collect next, when no line of the log points to a cause."),
        },
    )
    line = obj(
        "One line, or a run of context lines or of like unknown lines: every line is in one entry.",
        {
            "first": integer("The entry's first line (1-based)."),
            "last": integer("Its last line."),
            "status": words(("explained", "context", "unknown"), "What the lines are."),
            "level": string("E, W, I, V or D, as the line or its message writes it; empty for none."),
            "how": string("What recognised it (the catalogue, a library that could not be opened, ...)."),
            "layer": string("The layer it comes from (for an unknown line, the one its own words name)."),
            "message": string("The catalogued or known message it is."),
            "complete": boolean("Every piece of the message is in the line (else another version's form)."),
            "values": strings("The text each field of the message stood for."),
            "codes": array(
                obj(
                    "A code the line names.",
                    {
                        "value": integer("The value."),
                        "name": string("Its C name."),
                        "api": string("Its table."),
                    },
                ),
                "The codes the line names (or its message usually ends with).",
            ),  # fmt: skip
            "own_number": boolean("The codes are the number the line writes, not the message's usual one."),
            "missing": array(
                obj(
                    "A library the line says could not be opened.",
                    {
                        "name": string("The library as the line names it."),
                        "on_dsp": boolean("FastRPC was loading it onto the DSP (a Skel)."),
                        "reason": string("The loader's reason as the line gives it; empty for none."),
                        "ships": maybe(string("What ships it; null for a library q9diff does not list.")),
                        "variable": maybe(string("The variable that governs where it is looked for.")),
                    },
                ),
                "The libraries that could not be opened.",
            ),
            "signals": strings("What the line points to (library, skel, arch, version, vtcm, memory, ...)."),
            "cut": boolean("The line was longer than 4096 characters; the rest was not read."),
        },
        optional=("message", "complete", "values", "codes", "own_number", "missing", "signals", "cut"),
    )
    return {
        "schema": const("q9diff.explain/1", "The schema id of this object."),
        "query": string("What was asked (its first 4096 characters)."),
        "messages": array(message, "The messages found in the query, once each."),
        "codes": array(code, "The error values the query names (as a number, hex or C name)."),
        "terms": array(
            obj(
                "A word of q9diff's reports.",
                {
                    "term": string("The word."),
                    "says": string("What it means."),
                    "see": string("Where to read more."),
                },
            ),
            "The glossary term the query is.",
        ),  # fmt: skip
        "verdict": maybe(verdict | {"description": "The verdict over a pasted log; null: a code or term."}),
        "lines": array(line, "Every line of a pasted log, in order; empty for a code or term."),
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
    """Which toolchain the candidate was built with, as its own files say (q9diff.inputs.Input.toolchain)."""
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
    from q9diff.read.pte import KINDS  # start-up: read.pte

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
