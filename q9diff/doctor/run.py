"""`q9diff doctor`: is a Genie bundle consistent with itself, and with the known-good one?

Each check is a row of `RULES`: an id, the severity of what it finds, the hypothesis it answers (the
nine of the motivating case, `HYPOTHESES`), what it needs, and a function (q9diff.doctor.checks,
q9diff.doctor.reference). The engine runs the rows and turns their hits and notes into findings; it
knows no check by name. Presenters (terminal, JSON, HTML) read the same result (q9diff.doctor.result).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from q9diff.doctor import checks as c
from q9diff.doctor import container as ct
from q9diff.doctor import dialog as d
from q9diff.doctor import load as ld
from q9diff.doctor import places as pl
from q9diff.doctor import reference as r
from q9diff.doctor import target as tg
from q9diff.doctor.checks import Context, Hit, Note
from q9diff.doctor.result import SEVERITIES, DoctorResult, Finding
from q9diff.genie.bundle import Bundle, read_bundle
from q9diff.load.runtime import Runtime, in_folder
from q9diff.read.tables import Device, ai_hub_profile

if TYPE_CHECKING:  # the api layer's resolved input, named in signatures only
    from q9diff.inputs import Input

# What a rule needs before it can say anything; without it, the engine writes one note instead.
REFERENCE = "reference"  # --reference
SOME_PARTS = "some parts"  # at least one ctx-bin read
ALL_PARTS = "all parts"  # every ctx-bin read: a missing part is one error, not a cascade of consequences
CONFIG = "config"  # the bundle's Genie config was read (a folder of *.bin alone has none to check or fix)
TARGET = "target"  # --target DEVICE
RUNTIME = "runtime"  # --runtime VERSION, or runtime libraries the bundle ships


@dataclass(frozen=True)
class Rule:
    id: str
    severity: str  # of every Hit it yields; its Notes are info
    hypothesis: int | None  # 1-9 (HYPOTHESES) or None
    needs: tuple[str, ...]
    run: Callable[[Context], Iterable[Hit | Note]]


_ = ()
R, S, A, C, T, V = (REFERENCE,), (SOME_PARTS,), (ALL_PARTS,), (CONFIG,), (TARGET,), (RUNTIME,)
# fmt: off
RULES: tuple[Rule, ...] = tuple(Rule(*row) for row in (
    # id                           severity   hyp   needs            function
    ("config.genie-parser",        "error",   None, C,               pl.check_genie_parser),
    ("config.paths",               "error",   None, _,               pl.check_paths),
    ("ctx-bins.exist",             "error",   None, _,               c.check_exist),
    ("ctx-bins.binary",            "error",   None, _,               c.check_binary),
    ("ctx-bins.order",             "error",   None, A,               c.check_order),
    ("ctx-bins.order-named",       "warning", None, A,               c.check_order_named),
    ("ctx-bins.graphs",            "error",   None, A,               c.check_graphs),
    ("split",                      "error",   1,    R + A,           r.check_split),
    ("qairt.mix",                  "error",   2,    S,               c.check_qairt_mix),
    ("qairt.reference",            "warning", 2,    R + S,           r.check_qairt_reference),
    ("vocab.logits",               "error",   3,    A + C,           d.check_vocab_logits),
    ("vocab.tokenizer",            "error",   3,    C,               d.check_vocab_tokenizer),
    ("vocab.special",              "error",   3,    C,               d.check_vocab_special),
    ("context.size",               "error",   None, A + C,           d.check_context_size),
    ("context.kv",                 "error",   None, A + C,           d.check_kv),
    ("context.pos-id",             "error",   None, A + C,           d.check_pos_id),
    ("quantization.boundary",      "error",   None, A,               d.check_boundary),
    ("quantization.gather",        "error",   4,    R + S,           r.check_gather),
    ("quantization.float-fallback", "error",  5,    R + S,           r.check_float_fallback),
    ("quantization.io",            "error",   7,    R + S,           r.check_quant_io),
    ("build.soc_model",            "error",   9,    S,               tg.check_soc),
    ("build.vtcm",                 "warning", 6,    S,               tg.check_vtcm),
    ("build.weights-packing",      "warning", 8,    S,               tg.check_packing),
    ("build.optimization",         "warning", None, S,               tg.check_optimization),
    ("build.other",                "error",   None, R + S,           r.check_build_other),
    ("target.other",               "error",   None, T + S,           tg.check_other),
    ("target.vtcm-limit",          "error",   6,    T + S,           tg.check_vtcm_limit),
    ("target.reference",           "error",   None, T + R + S,       tg.check_reference),
    ("target.two-places",          "error",   None, T + S + C,       tg.check_two_places),
    ("extension.file",             "error",   None, C,               pl.check_extension_file),
    ("extension.qualcomm",         "error",   None, C,               pl.check_extension_qualcomm),
    ("extension.soc",              "error",   None, C,               pl.check_extension_soc),
    ("extension.generic",          "warning", 9,    C,               pl.check_extension_generic),
    ("two-places.soc_model",       "error",   None, S + C,           pl.check_two_places_soc),
    ("two-places.dsp_arch",        "error",   None, S,               pl.check_two_places_arch),
    ("two-places.weight-sharing",  "warning", None, S + C,           pl.check_two_places_sharing),
    ("two-places.graphs",          "warning", None, A,               pl.check_two_places_graphs),
    ("runtime.spill-fill",         "error",   None, S + C,           pl.check_spill_fill),
    ("runtime.mmap",               "warning", None, S + C,           pl.check_mmap),
    # An ExecuTorch .pte: the compile spec beside each QNN delegate against its binary
    ("executorch.compile-spec",    "warning", None, S,               ct.check_compile_spec),
    # Will it load: each finding carries its own severity and the load rule's id (q9diff.load.rules)
    ("load.runtime",               "error",   None, V + S,           ld.check_runtime),
    ("load.device",                "error",   None, T + S,           ld.check_device),
))
# fmt: on


def _missing(rule: Rule, ctx: Context) -> str | None:
    """Why `rule` cannot run on this bundle, or None."""
    b, unread = ctx.bundle, [p for p in ctx.bundle.parts if p.binary is None]
    if REFERENCE in rule.needs and ctx.reference is None:
        if ctx.target is not None:
            return "needs --reference: only a reference build shows it, a device name does not"
        return "needs --reference"
    if SOME_PARTS in rule.needs and not b.readable_parts():
        return "no ctx-bin could be read"
    if CONFIG in rule.needs and b.config is None:
        return "no Genie config (only the *.bin files were read)"
    if ALL_PARTS in rule.needs and b.single_file:
        return "one file given: the whole bundle's layout needs the bundle"
    if ALL_PARTS in rule.needs and (unread or not b.parts):
        return f"{len(unread)} of {len(b.parts)} ctx-bins not read" if unread else "no ctx-bins"
    return None


@dataclass
class Report:
    bundle: Bundle
    reference: Bundle | None
    findings: list[Finding] = field(default_factory=list)
    target: Device | None = None
    runtime: Runtime | None = None

    def result(self) -> DoctorResult:
        ref = None if self.reference is None else _label(self.reference)
        aimed = profile = None
        if self.target is not None:
            hub = ai_hub_profile()
            aimed = self.target.to_json() | {"label": self.target.label}
            profile = {"sentence": hub.sentence(self.target), "sources": hub.sources()}
        notes, findings = tuple(self.bundle.notes), tuple(self.findings)
        runtime = None if self.runtime is None else self.runtime.to_json()
        return DoctorResult(_label(self.bundle), ref, notes, findings, aimed, profile, runtime)

    def count(self, severity: str) -> int:
        return self.result().count(severity)

    @property
    def exit_code(self) -> int:
        return self.result().exit_code

    def hypotheses(self) -> dict[int, dict]:
        return self.result().hypotheses()

    def to_json(self) -> dict:
        return self.result().to_json()

    def files(self) -> list[Path]:
        """Every file the report was read from, the reference bundle's too: what --html must not be."""
        return [f for b in (self.bundle, self.reference) if b is not None for f in b.files()]


def _guarded(rule: Rule, ctx: Context) -> list[Hit | Note]:
    """A rule's items; a rule that fails on input it did not expect is one error naming it, not the end
    of the report (the other rules still run)."""
    try:
        return list(rule.run(ctx))
    except Exception as exc:  # any failure of one check is reported, never a traceback
        return [Hit(ctx.bundle.name, f"q9diff could not run this check ({type(exc).__name__}: {exc})", None)]


def run(
    bundle: Input,
    reference: Input | None = None,
    rules: tuple[Rule, ...] = RULES,
    target: Device | None = None,
    runtime: Runtime | None = None,
) -> Report:
    """Read the bundle (and reference), as the paths given were resolved (q9diff.inputs.given), and run
    every rule, against `target` and `runtime` too when given (a bundle that ships Qualcomm's runtime
    libraries names its runtime itself); BundleError when either cannot be read."""
    b = _read(bundle)
    ref = _read(reference) if reference is not None else None
    shipped = None if b.single_file else in_folder(b.root)
    if shipped is not None and runtime is None:
        b.notes.append(f"the bundle ships {shipped.label} ({shipped.source}): the load verdict is for it")
    elif shipped is not None and runtime is not None and shipped.qairt != runtime.qairt:
        b.notes.append(
            f"the bundle ships {shipped.label} ({shipped.source}); judged for --runtime {runtime.label}"
        )
    runtime = runtime or shipped
    ctx = Context(b, ref, target, runtime)
    report = Report(b, ref, target=target, runtime=runtime)
    for rule in rules:
        if TARGET in rule.needs and (target is None or REFERENCE in rule.needs and ref is None):
            continue  # the target's own rules say nothing without what they compare
        if RUNTIME in rule.needs and runtime is None:
            continue
        why = _missing(rule, ctx)
        items = [Note(b.name, f"not checked: {why}", False)] if why else _guarded(rule, ctx)
        for item in items:
            if isinstance(item, Hit):
                finding = Finding(
                    item.check or rule.id,
                    item.severity or rule.severity,
                    rule.hypothesis,
                    item.where,
                    item.evidence,
                    item.fix,
                )
            else:
                finding = Finding(
                    rule.id, "info", rule.hypothesis, item.where, item.evidence, None, item.ruled_out
                )
            report.findings.append(finding)
    order = {s: i for i, s in enumerate(SEVERITIES)}
    report.findings.sort(key=lambda f: (order[f.severity], f.ruled_out))
    return report


def _read(given: Input) -> Bundle:
    """The bundle a path names, or the one file given instead (a context binary, a container or one of
    its contexts: not a config, whatever its kind says of a name ending in .json)."""
    one = given.kind is not None and given.kind.form == "contexts" and given.given.suffix.lower() != ".json"
    if one:
        return read_bundle(given.given, given.at, list(given.parts))
    return read_bundle(given.given)


def _label(b: Bundle) -> str:
    return str(b.config_path or b.given)
