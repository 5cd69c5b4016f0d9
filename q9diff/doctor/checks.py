"""The checks `q9diff doctor` runs on one Genie bundle: its ctx-bins, vocabulary, context and KV layout
and split boundaries (the extension file against the binaries, "the two places", and runtime sizing are
in q9diff.doctor.places).

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


def _ids(value: object) -> list[int]:
    if isinstance(value, list):
        return [v for v in value if as_int(v) is not None]
    return [value] if as_int(value) is not None else []


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


def _n_vocab(b: Bundle) -> int | None:
    return as_int(b.get("dialog", "context", "n-vocab"))


def check_vocab_logits(ctx: Context) -> Iterator[Hit | Note]:
    b = ctx.bundle
    n = _n_vocab(b)
    where = f"{b.name}: dialog.context.n-vocab"
    dims = {}
    for (ar, _cl), members in b.genie_groups().items():
        logits = members[-1].tensor("logits", outputs=True)
        if logits is not None and logits.dims:
            dims[f"{members[-1].part.label} logits (AR {ar})"] = logits.dims[-1]
    if not dims:
        yield Note(
            where, "no split produces logits, so n-vocab cannot be compared (see ctx-bins.graphs)", False
        )
        return
    wrong = {k: v for k, v in dims.items() if v != n}
    if n is None:
        yield Hit(
            where,
            f"n-vocab is {js(b.get('dialog', 'context', 'n-vocab'))}; the logits have "
            f"{sorted(set(dims.values()))} columns",
            f"set dialog.context.n-vocab to {next(iter(dims.values()))}",
        )
    elif wrong:
        k, v = next(iter(wrong.items()))
        yield Hit(where, f"n-vocab {n}; {k} has {v} columns", f"set dialog.context.n-vocab to {v}")
    else:
        yield Note(where, f"n-vocab {n} = the last split's logits dimension")


def check_vocab_tokenizer(ctx: Context) -> Iterator[Hit | Note]:
    b = ctx.bundle
    n, size = _n_vocab(b), b.tokenizer_size
    where = f"{b.name}: dialog.tokenizer.path"
    if size is None:
        why = b.tokenizer_problem or "the config names no tokenizer"
        yield Note(where, f"tokenizer vocabulary unknown: {why}", False)
        return
    if n is not None and size > n:
        yield Hit(
            where,
            f"the tokenizer defines {size} ids, n-vocab is {n}: ids {n}..{size - 1} can never be sampled",
            "use the model's own tokenizer.json, or set n-vocab to the model's logits dimension",
        )
    elif n is not None:
        extra = "" if size == n else f" (n-vocab {n} pads it: ids {size}..{n - 1} decode to nothing)"
        yield Note(where, f"the tokenizer defines {size} ids{extra}")


# Genie's context schema (carried by libGenie.so, QAIRT 2.47-2.51) defines -1 as "unset" for bos-token,
# eos-token, eot-token and pad-token (a pad-token of -1 falls back to eos-token).
UNSET_TOKEN = -1


def check_vocab_special(ctx: Context) -> Iterator[Hit | Note]:
    b = ctx.bundle
    n, size = _n_vocab(b), b.tokenizer_size
    limit = min(x for x in (n, size) if x is not None) if (n, size) != (None, None) else None
    checked, unset = [], []
    for key in ("bos-token", "eos-token", "eot-token", "pad-token"):
        value = b.get("dialog", "context", key)
        if value is None:
            continue
        if value == UNSET_TOKEN and not isinstance(value, bool):
            unset.append(key)
            continue
        where = f"{b.name}: dialog.context.{key}"
        ids = _ids(value)
        if not ids or (isinstance(value, list) and len(ids) != len(value)):
            yield Hit(where, f"{key} is {js(value)}, not a token id", f"set {key} to the tokenizer's id")
            continue
        if limit is None:
            continue
        outside = [i for i in ids if not 0 <= i < limit]
        bounds = " and ".join(
            x for x in (f"n-vocab {n}" if n else "", f"the tokenizer's {size} ids" if size else "") if x
        )
        if outside:
            yield Hit(
                where,
                f"{key} {outside[0]} is outside the vocabulary ({bounds})",
                f"set {key} to the tokenizer's id for it (below {limit})",
            )
        else:
            checked.append(f"{key} {value}")
    if checked:
        yield Note(f"{b.name}: dialog.context", f"{', '.join(checked)} inside the vocabulary ({limit})")
    if unset:
        yield Note(
            f"{b.name}: dialog.context",
            f"{', '.join(unset)} -1: unset, as Genie's own config schema defines -1 (libGenie.so; Qualcomm's"
            " ai-hub-apps ChatApp config sets bos-token -1)",
        )


def check_context_size(ctx: Context) -> Iterator[Hit | Note]:
    b = ctx.bundle
    size = b.get("dialog", "context", "size")
    cls = sorted({cl for ar, cl in b.genie_groups() if cl is not None})
    where = f"{b.name}: dialog.context.size"
    named = {int(m.group(1)) for g in b.graphs() for m in [re.search(r"_cl(\d+)", g.graph.name)] if m}
    if named and named != set(cls):
        yield Hit(
            where,
            f"graph names say cl {sorted(named)}, attention_mask says CL {cls}",
            "rename or rebuild the graphs so names and tensors agree",
        )
    if not cls:
        return
    if as_int(size) is None or size != max(cls):
        yield Hit(
            where,
            f"context.size {js(size)}; the graphs' context length (attention_mask) is {max(cls)}",
            f"set dialog.context.size to {max(cls)}",
        )
    else:
        yield Note(where, f"context.size {size} = the graphs' context length")


def check_kv(ctx: Context) -> Iterator[Hit | Note]:
    b = ctx.bundle
    bwhere, backend = b.backend()
    htp = backend.get("QnnHtp") if isinstance(backend.get("QnnHtp"), dict) else {}
    kv_dim = htp.get("kv-dim")
    where = f"{b.name}: {bwhere}.QnnHtp.kv-dim"
    head_dims, lengths = set(), []
    for sg in b.graphs():
        for t in sg.graph.inputs:
            m = KV_INPUT.match(t.name)
            if not m or len(t.dims) < 2 or sg.cl is None:
                continue
            head, length = (t.dims[-2], t.dims[-1]) if m.group(1) == "key" else (t.dims[-1], t.dims[-2])
            head_dims.add(head)
            if length != sg.cl - sg.ar:
                lengths.append(
                    f"{sg.part.label} {t.name} {list(t.dims)}: {length} past columns, CL-AR = {sg.cl - sg.ar}"
                )
    for problem in lengths[:3]:
        yield Hit(
            f"{b.name}: KV cache", problem, "rebuild the graph with past length CL - AR (Genie's layout)"
        )
    if not head_dims:
        return
    if kv_dim is None:
        yield Note(
            where, f"no kv-dim in the config; the KV tensors' head dimension is {sorted(head_dims)}", False
        )
    elif len(head_dims) > 1 or kv_dim not in head_dims:
        yield Hit(
            where,
            f"kv-dim {js(kv_dim)}; the past_key/past_value tensors' head dimension is {sorted(head_dims)}",
            f"set {bwhere}.QnnHtp.kv-dim to {min(head_dims)}",
        )
    elif not lengths:
        yield Note(where, f"kv-dim {kv_dim} = the KV tensors' head dimension; past length CL-AR everywhere")


def check_pos_id(ctx: Context) -> Iterator[Hit | Note]:
    b = ctx.bundle
    bwhere, backend = b.backend()
    htp = backend.get("QnnHtp") if isinstance(backend.get("QnnHtp"), dict) else {}
    dims = {
        t.dims[-1]
        for sg in b.graphs()
        for t in sg.graph.inputs
        if t.name in ("position_ids_cos", "position_ids_sin") and t.dims
    }
    for key in ("pos-id-dim", "rope-dim"):
        if key not in htp or not dims:
            continue
        where = f"{b.name}: {bwhere}.QnnHtp.{key}"
        if htp[key] not in dims or len(dims) > 1:
            yield Hit(
                where,
                f"{key} {js(htp[key])}; position_ids_cos/sin have last dimension {sorted(dims)}",
                f"set {bwhere}.QnnHtp.{key} to {min(dims)}",
            )
        else:
            yield Note(where, f"{key} {htp[key]} = position_ids_cos/sin's last dimension")


def _encoding(t) -> str:
    return t.dtype if t.scale is None else f"{t.dtype} scale {t.scale:.6g} offset {t.offset}"


def check_boundary(ctx: Context) -> Iterator[Hit | Note]:
    """Genie hands a split's outputs to the next split and a KV _out to its _in as bytes: both ends must
    read them alike."""
    problems = []
    for (ar, _cl), members in ctx.bundle.genie_groups().items():
        if ar is None:  # not a graph Genie can place (ctx-bins.graphs says so)
            continue
        for prev, nxt in zip(members, members[1:]):
            made = {t.name: t for t in prev.graph.outputs}
            for t in nxt.graph.inputs:
                src = made.get(t.name)
                if src is not None and _encoding(src) != _encoding(t):
                    problems.append(
                        f"{t.name}: {prev.part.label} writes {_encoding(src)}, "
                        f"{nxt.part.label} reads {_encoding(t)}"
                    )
        for sg in members:
            outs = {t.name: t for t in sg.graph.outputs}
            for t in sg.graph.inputs:
                m = KV_INPUT.match(t.name)
                out = outs.get(f"past_{m.group(1)}_{m.group(2)}_out") if m else None
                if out is not None and _encoding(out) != _encoding(t):
                    problems.append(f"{sg.part.label} {t.name} {_encoding(t)} vs {out.name} {_encoding(out)}")
    for p in problems[:6]:
        yield Hit(ctx.bundle.name, p, "quantize both ends of the boundary with the same encoding and rebuild")
    if not problems and ctx.bundle.graphs():
        yield Note(
            ctx.bundle.name, "split boundaries and KV in/out pairs carry the same encodings on both ends"
        )
