"""What a container says beside its contexts: an ExecuTorch .pte's regions and delegates, and the compile
spec executorch stores beside each QNN delegate held against what the binary records (inspect shows it,
doctor finds it, the JSON carries it as `container`).

A compile spec value is read (q9diff.read.pte) or absent; each comparison is made only where both the
spec and the binary say a value, so a disagreement is two values read, never one guessed.
"""

from __future__ import annotations

import json

from q9diff.read.openers import Part, container, labels, open_part
from q9diff.read.pte import CompileSpec, Delegate, shown
from q9diff.read.tables import EXECUTORCH_CHIPSETS, soc_name

MIB = 1 << 20


def spec_findings(spec: CompileSpec | None, cb) -> list[str]:
    """Where a compile spec and the context binary beside it disagree, one sentence each ([] where they
    agree or one of them does not say)."""
    if spec is None or spec.problem:
        return []
    from q9diff.compare.structure import precision  # start-up: compare.structure
    from q9diff.compare.summary import target  # start-up: compare.summary

    out = []
    built = target(cb)["soc_model_requested"]
    if spec.soc_model is not None and built is not None and spec.soc_model != built:
        out.append(
            f"the compile spec asks soc_model {spec.soc_model} ({_chipset(spec.soc_model)});"
            f" the binary was built for soc_model {built} ({soc_name(built)})"
        )
    if spec.htp_arch and cb.dsp_arch and spec.htp_arch != cb.dsp_arch:
        out.append(
            f"the compile spec asks htp_arch V{spec.htp_arch}; the binary records dspArch v{cb.dsp_arch}"
        )
    vtcm = sorted({g.vtcm_size for g in cb.graphs if g.vtcm_size is not None})
    if spec.vtcm_mb and vtcm and vtcm != [spec.vtcm_mb * MIB]:
        recorded = ", ".join(f"{v / MIB:g} MiB" for v in vtcm)
        out.append(
            f"the compile spec asks vtcm_size_in_mb {spec.vtcm_mb}; the binary records VTCM {recorded}"
        )
    computes = precision(cb).activations if spec.precision else ()
    if spec.precision == "fp16" and computes and "float16" not in computes:
        out.append(f"the compile spec asks fp16 (use_fp16); the binary computes in {'/'.join(computes)}")
    if spec.precision == "quantized" and "float16" in computes:
        out.append(f"the compile spec asks a quantized build; the binary computes in {'/'.join(computes)}")
    shared = any(r.name.startswith("WEIGHTS/") for r in cb.records)
    if spec.weight_sharing is False and shared:
        out.append(
            "the compile spec says use_weight_sharing False; the binary holds shared weights (WEIGHTS/)"
        )
    return out


def _chipset(soc_model: int) -> str:
    name = EXECUTORCH_CHIPSETS.get(soc_model)
    return f"QcomChipset.{name}" if name else "no QcomChipset of executorch 1.5.1"


def container_json(part: Part) -> dict | None:
    """The .pte a path given points at (`part`, as q9diff.inputs resolved it: the file or one of its
    contexts) as JSON: its sizes, every region, every delegate with its compile spec and where that
    disagrees with the binary, and the opener's notes; None for any other file."""
    pte = container(part)
    if pte is None:
        return None
    base = str(part.file)
    names = labels(part)  # each binary's label, as FILE#LABEL addresses it
    delegates = []
    opened: dict[tuple[int, int], object] = {}
    found: dict[tuple, list[str]] = {}  # once per distinct (compile spec, binary): 3,400 delegates name one
    for d in pte.delegates:
        row = _delegate_json(d, names.get(d.binary))
        if d.is_qnn:
            if d.binary not in opened:
                opened[d.binary] = open_part(Part(part.file, str(d.number), part.container))
            if (d.spec, d.binary) not in found:
                found[d.spec, d.binary] = spec_findings(d.spec, opened[d.binary])
            row["compile_spec_findings"] = list(found[d.spec, d.binary])
        delegates.append(row)
    return {
        "kind": "executorch",
        "path": base,  # as the user gave it (the walk is cached by the resolved path)
        "size": pte.size,
        "program_size": pte.program_size,
        "segment_base_offset": pte.segment_base,
        "segment_data_size": pte.segment_data_size,
        "segments": [{"offset": o, "size": n} for o, n in pte.segments],
        "regions": [
            {"name": r.name, "offset": r.offset, "size": r.size, "kind": r.kind} for r in pte.regions()
        ],
        "delegates": delegates,
        "notes": list(pte.notes),
    }


def _delegate_json(d: Delegate, context: str | None) -> dict:
    row = {
        "method": d.method,
        "position": d.position,
        "number": d.number,
        "backend": d.backend,
        "location": d.location,
        "index": d.index,
        "payload_offset": None if d.payload is None else d.payload[0],
        "payload_size": None if d.payload is None else d.payload[1],
        "context": context,
    }
    if d.is_qnn:
        row |= {
            "binary_offset": d.binary[0],
            "binary_size": d.binary[1],
            "signature": d.signature,
            "compile_spec": None if d.spec is None else d.spec.to_json(),
            "compile_spec_findings": [],
        }
    return row


def alike(delegates: list[dict]) -> list[list[dict]]:
    """The QNN delegates grouped by what their compile spec says about their binary: one group per
    distinct (compile spec, binary), in file order, so each disagreement is said once, naming them all."""
    groups: dict[str, list[dict]] = {}
    for d in delegates:
        key = json.dumps([d["compile_spec"], d["binary_offset"], d["binary_size"]], sort_keys=True)
        groups.setdefault(key, []).append(d)
    return list(groups.values())


def where(group: list[dict], limit: int = 3) -> str:
    """The delegates of a group, as a finding names them: `method 'forward' delegate 0`, or the first few
    and how many more."""
    named = [f"method {shown(d['method'])} delegate {d['position']}" for d in group[:limit]]
    more = f" and {len(group) - limit:,d} more delegates" if len(group) > limit else ""
    return ", ".join(named) + more
