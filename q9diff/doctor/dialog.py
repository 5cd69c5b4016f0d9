"""The checks `q9diff doctor` runs on the dialog a Genie bundle runs: its vocabulary (the logits, the
tokenizer, the special tokens), its context size, KV layout and position ids against the graphs, and the
boundaries between splits, where both ends must read the bytes alike. Hits and Notes as in
q9diff.doctor.checks."""

from __future__ import annotations

import re
from collections.abc import Iterator

from q9diff.doctor.checks import KV_INPUT, Context, Hit, Note, as_int, js
from q9diff.genie.bundle import Bundle


def _ids(value: object) -> list[int]:
    if isinstance(value, list):
        return [v for v in value if as_int(v) is not None]
    return [value] if as_int(value) is not None else []


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
