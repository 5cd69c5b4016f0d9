"""The checks `q9diff doctor` runs on one Genie bundle's ctx-bins (they exist, read, come in order, hold
the graphs Genie places, from one QAIRT), and what every check reads and yields: the dialog the bundle runs
(vocabulary, context and KV layout, split boundaries) is checked in q9diff.doctor.dialog; the extension
file against the binaries, "the two places", and runtime sizing in q9diff.doctor.places.

Each check reads a `Context` and yields `Hit`s (a problem: where, both values, the fix in the file it
belongs to) and `Note`s (what it checked and found fine, or why it could not look). Severity and
hypothesis belong to the rule's row in q9diff.doctor.RULES, not to the function.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

from q9diff.genie.bundle import Bundle, CtxBin
from q9diff.load.runtime import Runtime
from q9diff.read.tables import Device
from q9diff.units import human

KV_INPUT = re.compile(r"^past_(key|value)_(\d+)_in$")

GENIE_FED = {"input_ids", "attention_mask", "position_ids_cos", "position_ids_sin", "position_ids"}


@dataclass(frozen=True)
class Hit:
    where: str
    evidence: str
    fix: str | None
    severity: str | None = (
        None  # its own, where a rule's hits differ (load: error or warning); else the rule's
    )
    check: str | None = None  # its own check id, where one rule runs several (the load rules)


@dataclass(frozen=True)
class Note:
    where: str
    evidence: str
    ruled_out: bool = True  # False: could not be checked or observed


@dataclass
class Context:
    """What the checks read: the bundle, the reference, the target device, and per-part diffs and
    judgements against the target computed once."""

    bundle: Bundle
    reference: Bundle | None
    target: Device | None = None
    runtime: Runtime | None = None  # --runtime, or the runtime libraries the bundle ships

    @cached_property
    def pairs(self) -> list[tuple[CtxBin, CtxBin]]:
        """Parts paired with the reference's: by the graph names they hold, else by position."""
        if self.reference is None:
            return []
        mine, theirs = self.bundle.readable_parts(), self.reference.readable_parts()
        by_names = {_names(p): p for p in theirs}
        out, used = [], set()
        for p in mine:
            q = by_names.get(_names(p))
            if q is None and p.index < len(self.reference.parts):
                q = self.reference.parts[p.index] if self.reference.parts[p.index].binary else None
            if q is not None and id(q) not in used:
                used.add(id(q))
                out.append((p, q))
        return out

    @cached_property
    def judged(self) -> list[tuple[CtxBin, object]]:
        """Each readable part against --target (q9diff.compare.target.TargetResult); [] without one."""
        if self.target is None:
            return []
        from q9diff.compare.target import judge  # start-up: compare.target, numpy

        return [(p, judge(p.binary, self.target)) for p in self.bundle.readable_parts()]

    @cached_property
    def diffs(self) -> list[tuple[CtxBin, CtxBin, object]]:
        from q9diff.compare.diff import diff  # start-up: compare.diff, numpy

        return [(p, q, diff(p.binary, q.binary)) for p, q in self.pairs]


def js(value: object) -> str:
    """A config value as the config spells it (JSON), for evidence."""
    return json.dumps(value, default=str)


def _names(p: CtxBin) -> tuple[str, ...]:
    return tuple(sorted(g.name for g in p.binary.graphs))


def requested_soc(p: CtxBin) -> int | None:
    """The soc_model the part's build asked for (0 = generic target), from the bytes (one story with
    inspect and diff: q9diff.compare.summary.target)."""
    from q9diff.compare.summary import target  # start-up: compare.summary

    return target(p.binary)["soc_model_requested"]


def parts_text(parts: list[CtxBin], total: int) -> str:
    names = ", ".join(p.label for p in parts)
    if len(parts) == total > 1:
        return f"all {total} parts: {names}"
    return f"{names} ({len(parts)} of {total} parts)" if total > 1 else names


def as_int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def mib(n: int | None) -> str:
    """Bytes in the binary units every presenter uses (q9diff.units): VTCM 8388608 is '8 MiB'."""
    return "unknown" if n is None else human(n)


def check_exist(ctx: Context) -> Iterator[Hit | Note]:
    b = ctx.bundle
    if not b.parts and b.config is not None:
        yield Hit(
            f"{b.name}: dialog.engine.model.binary", "the config names no ctx-bins", "list the ctx-bins"
        )
    missing = [p for p in b.parts if p.ref.kind == "missing"]
    if missing:
        first = missing[0].ref
        where = (
            first.where if len(missing) == 1 else f"{first.where.rsplit('[', 1)[0]}[{len(missing)} entries]"
        )
        problems = "; ".join(p.ref.problem for p in missing)  # the one config reader's words
        yield Hit(
            where,
            f"{len(missing)} of {len(b.parts)} ctx-bins not in the bundle: {problems} (from the config's "
            "folder; a tool running Genie may resolve them from elsewhere)",
            "put the ctx-bins in the bundle folder beside the config, as named, or fix the paths",
        )
    elif b.parts:
        yield Note(b.name, f"all {len(b.parts)} ctx-bins exist inside the bundle")


def check_binary(ctx: Context) -> Iterator[Hit | Note]:
    for p in ctx.bundle.parts:
        if p.problem:
            yield Hit(p.ref.where, p.problem, "replace it with the context binary the build produced")
    read = ctx.bundle.readable_parts()
    if read and not any(p.problem for p in ctx.bundle.parts):
        yield Note(ctx.bundle.name, f"{len(read)} ctx-bins are QNN context binaries")


def _order_check(ctx: Context, named: bool) -> Iterator[Hit | Note]:
    for (ar, cl), members in ctx.bundle.genie_groups().items():
        if ar is None or all(m.split for m in members) != named:
            continue
        genie = [m.part.index for m in members]
        if genie != sorted(genie):
            order = " → ".join(f"{m.part.label} ({m.graph.name})" for m in members)
            listed = " → ".join(m.part.label for m in sorted(members, key=lambda m: m.part.index))
            why = (
                "Genie runs the splits by their graph names' _i_of_n suffix"
                if named
                else "Genie sorts graphs without an _i_of_n suffix by name, as strings, not by ctx-bins"
            )
            yield Hit(
                f"{ctx.bundle.name}: ctx-bins (AR {ar}, CL {cl})",
                f"{why}: it will run {order}; ctx-bins lists {listed}",
                "list ctx-bins in split order"
                if named
                else "rename the graphs with AI Hub's _i_of_n suffix (ONNX Runtime's QNN EP has no option "
                "for graph names: it writes QNNExecutionProvider_QNNExecutionProvider_<hash>_1_0), or "
                "rebuild so that the names sort in split order; reordering ctx-bins changes nothing",
            )
        else:
            yield Note(
                f"{ctx.bundle.name}: AR {ar}, CL {cl}",
                f"Genie's split order is the ctx-bins order ({len(members)} splits)",
            )


def check_order(ctx: Context) -> Iterator[Hit | Note]:
    return _order_check(ctx, named=False)


def check_order_named(ctx: Context) -> Iterator[Hit | Note]:
    return _order_check(ctx, named=True)


def check_graphs(ctx: Context) -> Iterator[Hit | Note]:
    """Every (AR, CL) group is a whole chain: same split count, input_ids first, logits last, and each
    split fed by the one before it."""
    groups = ctx.bundle.genie_groups()
    counts = {k: len(v) for k, v in groups.items()}
    for (ar, cl), members in groups.items():
        if ar is None:
            for m in members:
                yield Hit(
                    f"{m.part.label}: graph {m.graph.name}",
                    "no attention_mask input [.., AR, CL]: Genie cannot tell its AR and context length",
                    "use the graphs Genie's export makes (input_ids, attention_mask, position_ids_*, past_*)",
                )
            continue
        where = f"{ctx.bundle.name}: AR {ar}, CL {cl}"
        problems = []
        if "input_ids" not in {t.name for t in members[0].graph.inputs}:
            problems.append(f"the first split {members[0].part.label} takes no input_ids")
        if members[-1].tensor("logits", outputs=True) is None:
            problems.append(f"the last split {members[-1].part.label} produces no logits")
        for prev, nxt in zip(members, members[1:]):
            made = {t.name: t.dims for t in prev.graph.outputs}
            for t in nxt.graph.inputs:
                if t.name in GENIE_FED or KV_INPUT.match(t.name):
                    continue
                if made.get(t.name) != t.dims:
                    have = made.get(t.name)
                    problems.append(
                        f"{nxt.part.label} needs {t.name} {list(t.dims)}, which {prev.part.label} "
                        + ("does not produce" if have is None else f"produces as {list(have)}")
                    )
        splits = [m.split for m in members if m.split]
        if splits and sorted(i for i, _ in splits) != list(range(1, len(members) + 1)):
            problems.append(
                f"graph name suffixes {[f'{i}_of_{n}' for i, n in splits]} for {len(members)} splits"
            )
        if len(set(counts.values())) > 1:
            others = sorted({n for k, n in counts.items() if k != (ar, cl)})
            problems.append(f"{len(members)} split(s) here; the other AR/CL groups have {others}")
        for p in problems:
            yield Hit(where, p, "every part must hold its split's graph for each AR; rebuild the missing one")
        if not problems:
            yield Note(where, f"{len(members)} splits chain from input_ids to logits")


def check_qairt_mix(ctx: Context) -> Iterator[Hit | Note]:
    builds: dict[str, list[CtxBin]] = {}
    for p in ctx.bundle.readable_parts():
        builds.setdefault(p.binary.build_id or "not recorded", []).append(p)
    total = len(ctx.bundle.readable_parts())
    if len(builds) > 1:
        main = max(builds, key=lambda k: len(builds[k]))
        odd = [p for k, ps in builds.items() if k != main for p in ps]
        yield Hit(
            ", ".join(p.ref.where for p in odd),
            f"{', '.join(f'{p.label}: {p.binary.build_id}' for p in odd)}; the other parts: {main}",
            f"recompile {', '.join(p.label for p in odd)} with QAIRT {main} (all parts from one build)",
        )
    elif builds:
        yield Note(
            ctx.bundle.name,
            f"one QAIRT build across all {total} parts: {next(iter(builds))}. The converter's version is not "
            "recorded in a context binary: its log or the DLC it wrote would show a converter/compiler mix",
        )
