"""Write ExecuTorch `.pte` programs of any shape from the real fixtures' parts, for the hostile tests and
the fuzzers: methods named anything (repeated, `a/b`, 300 characters), any number of delegates naming any
segment, segments of any size and placement.

The parts are the committed fixtures' own bytes (fixtures/pte, made by scripts/make_pte_fixtures.py): a QNN
payload (the 256-byte QnnContextCustomProtocol header and the context binary after it), the compile spec
executorch stored beside it, and with_xnnpack.pte's XNNPACK payload. The Program FlatBuffer is built with the
flatbuffers package from the slots formats/pte.py declares (executorch's public schema/program.fbs), and the
file header is laid out as executorch 1.5.1 lays it (fixtures/pte/FACTS.md): the extended header in the
FlatBuffer's padding at 0x08, the program rounded up to 128 bytes, then the segments.

    from pte_writer import Delegate, Method, parts, write
    p = parts()
    data = write([Method("forward", [Delegate(segment=1)]), Method("forward", [Delegate(segment=2)])],
                 [b"", p.qnn["fp16_sm8650"], p.qnn["fp16_qcs9100"]])
"""

from __future__ import annotations

import struct
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from q9diff.formats import pte as P  # noqa: E402

PTE = ROOT / "fixtures" / "pte"
HEADER_GAP = P.EXTENDED_HEADER_LENGTH  # the extended header, put between the identifier and the tables


@dataclass(frozen=True)
class Delegate:
    """One entry of a method's delegate list: its backend id, the segment (or inline data) it names, and
    the compile spec stored beside it (None: none; the QNN fixtures' own by default)."""

    segment: int
    backend: str = P.QNN_BACKEND
    spec: bytes | None = b"fixture"  # b"fixture": the spec of the fixture whose payload the segment holds
    location: int = P.LOCATION_SEGMENT


@dataclass(frozen=True)
class Method:
    name: str | bytes
    delegates: list[Delegate] = field(default_factory=list)


@dataclass(frozen=True)
class Parts:
    """The fixtures' parts by fixture name: each QNN payload (header and binary), its compile spec, and
    the XNNPACK payload of with_xnnpack.pte."""

    qnn: dict[str, bytes]
    spec: dict[str, bytes]
    xnnpack: bytes


def _program(data: bytes):
    from q9diff.read import flatbuf

    return flatbuf.root(memoryview(data), 0, struct.unpack_from("<Q", data, 0x10)[0], "fixture")


@cache
def parts() -> Parts:
    """Every one-QNN-delegate fixture's payload and compile spec, read from its bytes as executorch
    placed them (the segment named by delegate 0 of method 0), and the XNNPACK payload."""
    qnn, spec, xnnpack = {}, {}, b""
    for path in sorted(PTE.glob("*.pte")):
        data = path.read_bytes()
        program = _program(data)
        base = struct.unpack_from("<Q", data, 0x18)[0]
        segments = [
            (s.get(P.DATA_SEGMENT["offset"], 0), s.get(P.DATA_SEGMENT["size"], 0))
            for s in program.get(P.PROGRAM["segments"])
        ]
        for plan in program.get(P.PROGRAM["execution_plan"]):
            for d in plan.get(P.EXECUTION_PLAN["delegates"]):
                index = d.get(P.BACKEND_DELEGATE["processed"]).get(P.DATA_REFERENCE["index"], 0)
                off, n = segments[index]
                payload = data[base + off : base + off + n]
                if d.get(P.BACKEND_DELEGATE["id"]) != P.QNN_BACKEND:
                    xnnpack = payload
                    continue
                if path.stem in qnn:
                    continue
                qnn[path.stem] = payload
                for cs in d.get(P.BACKEND_DELEGATE["compile_specs"]):
                    if cs.get(P.COMPILE_SPEC["key"]) == P.QNN_COMPILE_SPEC:
                        spec[path.stem] = cs.get(P.COMPILE_SPEC["value"])
    return Parts(qnn, spec, xnnpack)


def _spec_of(payload: bytes) -> bytes | None:
    p = parts()
    for name, q in p.qnn.items():
        if q == payload:
            return p.spec.get(name)
    return None


def write(methods: list[Method], segments: list[bytes], *, align: int = P.SEGMENT_ALIGNMENT,
          offsets: list[int] | None = None, inline: list[bytes] = ()) -> bytes:  # fmt: skip
    """The bytes of a .pte holding `methods` over `segments` (segment i's payload; segments[0] is the empty
    constant segment executorch writes, b""), each placed `align`-aligned after the one before (or at
    `offsets`, relative to the segment base, as given)."""
    import flatbuffers

    b = flatbuffers.Builder(1 << 16)

    def vector(items: list[int]) -> int:
        b.StartVector(4, len(items), 4)
        for x in reversed(items):
            b.PrependUOffsetTRelative(x)
        return b.EndVector()

    places, pos = [], 0
    for i, s in enumerate(segments):
        at = offsets[i] if offsets is not None else (0 if not s else pos)
        places.append(at)
        if s and offsets is None:
            pos = at + len(s)
            pos += -pos % align if align > 1 else 0
    end = max((at + len(s) for at, s in zip(places, segments)), default=0)

    seg_tables = []
    for at, s in zip(places, segments):
        b.StartObject(2)
        b.PrependUint64Slot(P.DATA_SEGMENT["offset"].slot, at, 0)
        b.PrependUint64Slot(P.DATA_SEGMENT["size"].slot, len(s), 0)
        seg_tables.append(b.EndObject())
    inline_tables = []
    for data in inline:
        vec = b.CreateByteVector(data)
        b.StartObject(1)
        b.PrependUOffsetTRelativeSlot(P.INLINE_DATA["data"].slot, vec, 0)
        inline_tables.append(b.EndObject())
    plans = []
    for m in methods:
        delegates = []
        for d in m.delegates:
            value = d.spec
            if value == b"fixture":
                value = _spec_of(segments[d.segment]) if d.segment < len(segments) else None
            spec_list = []
            if value is not None:
                key, vec = b.CreateString(P.QNN_COMPILE_SPEC), b.CreateByteVector(value)
                b.StartObject(2)
                b.PrependUOffsetTRelativeSlot(P.COMPILE_SPEC["key"].slot, key, 0)
                b.PrependUOffsetTRelativeSlot(P.COMPILE_SPEC["value"].slot, vec, 0)
                spec_list.append(b.EndObject())
            cs = vector(spec_list)
            backend = b.CreateString(d.backend)
            b.StartObject(2)
            b.PrependInt8Slot(P.DATA_REFERENCE["location"].slot, d.location, -1)
            b.PrependUint32Slot(P.DATA_REFERENCE["index"].slot, d.segment, 0)
            ref = b.EndObject()
            b.StartObject(3)
            b.PrependUOffsetTRelativeSlot(P.BACKEND_DELEGATE["id"].slot, backend, 0)
            b.PrependUOffsetTRelativeSlot(P.BACKEND_DELEGATE["processed"].slot, ref, 0)
            b.PrependUOffsetTRelativeSlot(P.BACKEND_DELEGATE["compile_specs"].slot, cs, 0)
            delegates.append(b.EndObject())
        dvec = vector(delegates)
        name = b.CreateString(m.name)
        b.StartObject(9)
        b.PrependUOffsetTRelativeSlot(P.EXECUTION_PLAN["name"].slot, name, 0)
        b.PrependUOffsetTRelativeSlot(P.EXECUTION_PLAN["delegates"].slot, dvec, 0)
        plans.append(b.EndObject())
    plan_vec, seg_vec, inline_vec = vector(plans), vector(seg_tables), vector(inline_tables)
    b.StartObject(5)
    b.PrependUOffsetTRelativeSlot(P.PROGRAM["execution_plan"].slot, plan_vec, 0)
    b.PrependUOffsetTRelativeSlot(P.PROGRAM["backend_delegate_data"].slot, inline_vec, 0)
    b.PrependUOffsetTRelativeSlot(P.PROGRAM["segments"].slot, seg_vec, 0)
    b.Finish(b.EndObject(), file_identifier=P.PTE_IDENT)
    fb = bytes(b.Output())
    # The extended header goes between the identifier and the tables: only the root offset crosses it.
    program_size = len(fb) + HEADER_GAP
    base = program_size + (-program_size % P.SEGMENT_ALIGNMENT)
    root = struct.unpack_from("<I", fb, 0)[0] + HEADER_GAP
    head = struct.pack("<I4s4sIQQQ", root, P.PTE_IDENT, P.EXTENDED_MAGIC, P.EXTENDED_HEADER_LENGTH,
                       program_size, base, end)  # fmt: skip
    out = bytearray(head + fb[8:])
    out += bytes(base - len(out))
    out += bytes(end)
    for at, s in zip(places, segments):
        out[base + at : base + at + len(s)] = s
    return bytes(out)


def payload_of(binary: bytes, signature: int = 0) -> bytes:
    """A QNN payload around any context binary (a fixture's .bin): the 256-byte header executorch writes
    before it (formats/pte.py QnnPayloadHeader), then the binary."""
    return P.QnnPayloadHeader.build({"signature": signature, "binary_size": len(binary)}) + binary


def method_of(fixture: str, name: str | bytes) -> tuple[list[Method], list[bytes]]:
    """A one-method program of `fixture`'s QNN payload, its method named `name` (the fixture's own spec)."""
    return [Method(name, [Delegate(1)])], [b"", parts().qnn[fixture]]
