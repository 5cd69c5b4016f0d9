"""The fields of `q9diff.layers/1`: the first tensor where a build leaves its float model (q9diff.layers)."""

from __future__ import annotations

from q9diff.schemas._commands import real
from q9diff.schemas._nodes import array, boolean, const, integer, maybe, obj, size, string, strings, words

NEW_FIGURES = ("elements", "grid_db")  # fields a result saved by an earlier q9diff lacks


def figures() -> dict:
    return obj(
        "How far the candidate's tensor is from the reference's (the side taken as right).",
        {
            "cosine": real("The cosine similarity."),
            "max_abs": real("The largest absolute difference."),
            "rel": real("The relative error, ||cand - ref|| / ||ref||."),
            "sqnr_db": real("The SQNR, 10 log10(||ref||^2 / ||cand - ref||^2), in dB; inf when equal."),
            "steps": maybe(real("max_abs in steps of the tensor's quantization grid; null: no scale known.")),
            "local_sqnr_db": maybe(
                real(
                    "The SQNR against the reference's own computation of this tensor from the candidate's "
                    "inputs, counting only error beyond rounding to the tensor's grid: the error its node "
                    "adds itself, which the rule judges; null: not recomputed."
                )
            ),
            "local_nodes": maybe(
                size("How many of the reference's nodes that recomputation spanned (1: the node alone).")
            ),
            "elements": maybe(size("How many values the tensor holds.")),
            "grid_db": maybe(
                real(
                    "The SQNR rounding to the tensor's own grid alone leaves on its signal, "
                    "10 log10(mean(x^2) / (scale^2/12)): what its quantization allows; null: no scale known."
                )
            ),
        },
        optional=NEW_FIGURES,
    )


def _divergence() -> dict:
    fields = figures()["properties"]
    return obj(
        "The first tensor, in graph order, whose error stands out from the noise of the tensors before it.",
        {
            "graph": string("The candidate graph it is in."),
            "tensor": string("The source tensor, named as the float model names it."),
            "node": string("The node of the candidate's model that computes it."),
            "op": string("That node's op type."),
            **fields,
            "before": obj(
                "The noise of the tensors measured before it.",
                {
                    "sqnr_db": real("The rule's percentile of their local SQNRs (inf: none before)."),
                    "cosine": real("Their lowest cosine against the reference."),
                },
            ),
            "previous": maybe(string("The tensor measured just before it; null: none.")),
            "allowance_db": real(
                "The local SQNR below which the rule calls this tensor a divergence (its own grid and "
                "element count allowing)."
            ),
            "borderline": boolean("Its local SQNR is within the rule's borderline band of that allowance."),
        },
        optional=NEW_FIGURES + ("allowance_db", "borderline"),
    )


def _finding() -> dict:
    return obj(
        "What the QDQ model's encodings say, read without running it.",
        {
            "kind": words(
                ("bit_width", "qdq_mismatch"), "A bit-width outlier, or a Q/DQ pair that disagrees."
            ),
            "tensor": string("The tensor quantized (a QuantizeLinear's input, a weight's initializer)."),
            "node": string("The QuantizeLinear or DequantizeLinear concerned."),
            "text": string("The finding in words."),
        },
    )


def _cpu_only() -> dict:
    return obj(
        "A tensor whose own error on ONNX Runtime's CPU EP (the QDQ model as written) is below its allowance "
        "while the HTP build's is not.",
        {
            "tensor": string("The source tensor."),
            "cpu_db": real("The CPU run's local SQNR of it."),
            "htp_db": real("The HTP build's local SQNR of it."),
            "why": string("What the model's encodings say about it ('' when nothing)."),
        },
    )


def _compile() -> dict:
    return obj(
        "One compile: the untapped graph, or a stage's tapped build (candidate or a recipe reference).",
        {
            "side": words(("candidate", "reference"), "Whose graph was compiled."),
            "label": string("untapped, or stage N."),
            "taps": size("How many tensors it made graph outputs."),
            "binary": string("Where the build is kept (the cache)."),
            "size": size("The binary's size in bytes."),
            "cached": boolean("True when the cache already held it (the same taps, settings and QAIRT)."),
            "seconds": real("How long it took (the compile, or finding it in the cache)."),
            "vs_untapped": maybe(
                obj(
                    "Where a tapped candidate build differs from the untapped one: q9diff's diff of the two "
                    "binaries, and its graph outputs against the untapped build's on the same inputs.",
                    {
                        "size": array(size("bytes"), "The two binaries' sizes, untapped then tapped."),
                        "ops": array(size("ops"), "Their op counts, untapped then tapped."),
                        "words": strings("The diff's words for what changed in the structure."),
                        "outputs": maybe(figures() | {"description": "The worst graph output's figures."}),
                    },
                )
            ),
        },
    )


def _graph() -> dict:
    return obj(
        "One candidate graph against its reference.",
        {
            "graph": string("The graph's name in the recipe."),
            "part": string("Its part."),
            "model": string("The candidate's QDQ model."),
            "reference": string("The reference model it was paired with (by its inputs)."),
            "inputs": obj(
                "What both sides were fed.",
                {
                    "source": words(("npz", "seeded", "genie"), "Where the values came from."),
                    "detail": string("The file, the seed, or the prompt decoded for Genie's inputs."),
                },
            ),
            "tappable": size("Tensors both sides have: what a run could compare."),
            "measured": size("Tensors compared (fewer than tappable when narrowed block by block)."),
            "first_divergence": maybe(_divergence()),
            "tensors": array(
                obj(
                    "One tensor compared.",
                    {
                        "tensor": string("The source tensor."),
                        "node": string("The candidate's node computing it."),
                        "op": string("Its op type."),
                        "order": size("Its position in the candidate's graph order."),
                        "stage": integer("The compile that tapped it (1, 2, ...)."),
                        "figures": maybe(figures() | {"description": "null: shaped differently."}),
                        "resolved": boolean(
                            "Its own error was recomputed from measured tensors alone, so the rule judges it "
                            "(false: a block's, in a narrowed run)."
                        ),
                    },
                ),
                "Every tensor compared, in graph order.",
            ),
            "untapped": array(
                obj(
                    "A tensor with no tap: fused away by the quantizer or compiler, or not quantized.",
                    {
                        "tensor": string("Its name."),
                        "node": string("The node computing it."),
                        "op": string("Its op type."),
                        "side": words(("reference", "candidate"), "Whose graph holds it."),
                        "stand_in": maybe(string("The tapped tensor computed from it that stands in.")),
                    },
                ),
                "Tensors with no tap, each with its stand-in.",
            ),
            "unmatched": strings("Candidate taps the reference has no tensor of that name for."),
            "compiles": array(_compile(), "Every compile for this graph, in order."),
            "notes": strings("What this graph's run could not do, each a sentence."),
            "worst": maybe(_divergence())
            | {"description": "The tensor whose own error lies furthest below its allowance; null: none."},
            "near": maybe(_divergence())
            | {"description": "With no divergence, the first tensor borderline above its allowance."},
            "encodings": array(_finding(), "Bit-width outliers and Q/DQ mismatches of the QDQ model."),
            "cpu": array(_cpu_only(), "Tensors that diverge on the CPU and not on the HTP build."),
        },
        optional=("worst", "near", "encodings", "cpu"),
    )


def layers_properties() -> dict:
    return {
        "schema": const("q9diff.layers/1", "The schema id of this object."),
        "candidate": string("The candidate as given: a recipe, RECIPE#PART/GRAPH or a QDQ .onnx."),
        "reference": string("The reference as given: a float .onnx, a folder of them, or a recipe."),
        "runs": obj(
            "Where each side ran.",
            {
                "candidate": string("The x86 HTP emulator, with CPU fallback disabled."),
                "reference": string("ONNX Runtime's CPU EP (a model) or the emulator (a recipe)."),
            },
        ),
        "rule": obj(
            "How the first divergence is judged.",
            {
                "percentile": real("The percentile of the local SQNRs before a tensor taken as their noise."),
                "margin_db": real("How far below that noise a tensor's local SQNR must be."),
                "floor_db": real("The local SQNR it must also be below (its allowance, at most)."),
                "grid_margin_db": maybe(
                    real("The allowance is at most this far below what the tensor's own grid leaves.")
                ),
                "spread": real("The allowance is lowered by this many σ of an SQNR over the element count."),
                "borderline_db": real("Within this of its allowance, either side, a tensor is borderline."),
                "worst_gap_db": real("The worst own error is named beside the first when this far below it."),
                "narrow_db": maybe(
                    real("A block whose own error is below this is tapped inside (null: the floor).")
                ),
                "within_steps": maybe(
                    real(
                        "A tensor no value of which is further than this many steps of its grid from the "
                        "reference is not judged (null: every tensor is)."
                    )
                ),
                "measured_on": string("What the thresholds were measured on (scripts/measure_layers.py)."),
                "text": string("The rule in words."),
            },
            optional=(
                "grid_margin_db",
                "spread",
                "borderline_db",
                "worst_gap_db",
                "narrow_db",
                "within_steps",
            ),
        ),
        "first_divergence": maybe(_divergence())
        | {"description": "The first divergence of the first graph that has one; null: none."},
        "compiles": obj(
            "How many compiles the run took.",
            {"total": size("Every compile, cached or not."), "cached": size("Those the cache already held.")},
        ),
        "seconds": real("How long the run took."),
        "graphs": array(_graph(), "Each candidate graph compared (prompt and token graphs apart)."),
        "notes": strings("What the run changed or cannot show, each a sentence."),
    }
