"""An ExecuTorch `.pte` read as a container of QNN context binaries: every method and every delegate, each
QNN delegate's payload found through the program's segments and its 256-byte header checked, the compile
spec executorch stores beside it read, and every byte of the file in one named region. The layouts are
q9diff.formats.pte's; this walks them.

Each distinct context binary is one entry, named by its method (`forward`), or `method:i` where a method
holds several QNN delegates (i: the delegate's place in its method); a payload several delegates share
(two methods of one weight-shared context) is read once, and every method's name and every delegate's
number in the file (`0`, `1` ...) addresses it. Other backends' delegates are listed, not read.

Work is bounded by the file: at most MAX_DELEGATES delegates, each delegate table read once (a table
listed twice is refused), each payload header and compile spec read once however many delegates name it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from q9diff.errors import FormatError
from q9diff.formats import pte as P
from q9diff.read import flatbuf
from q9diff.read.model import Region
from q9diff.read.parse import parse, zeros

MAX_DELEGATES = 4096  # a model lowered in thousands of partitions is no .pte anyone runs
MAX_NOTES = 5  # notes of one kind said one by one; past it, one line counts the rest
# What a region of the container holds: its header and Program FlatBuffer, a QNN payload's header
# (structure); a QNN context binary (context); another backend's payload (delegate); a segment no delegate
# names (data: constants, or bytes q9diff does not read); zeros between them (padding); other bytes no
# structure explains (unknown).
KINDS = ("structure", "context", "delegate", "data", "padding", "unknown")


@dataclass(frozen=True)
class CompileSpec:
    """The QnnExecuTorchOptions beside one QNN delegate, as far as it reads: None where its table is
    absent; `problem` says why it could not be read at all."""

    size: int
    soc_model: int | None = None
    htp_arch: int | None = None
    vtcm_mb: int | None = None
    backend_type: int | None = None
    precision: str | None = None  # "quantized" or "fp16" (P.PRECISIONS); None: not an HTP spec
    weight_sharing: bool | None = None
    dlbc: bool | None = None
    problem: str | None = None

    def to_json(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class Delegate:
    """One entry of a method's delegate list."""

    method: str
    position: int  # in its method's list
    number: int  # in the file, over every method in order
    backend: str  # its id: QnnBackend, XnnpackBackend ...
    location: str  # "segment" or "inline"
    index: int  # of the segment, or of the inline data
    payload: tuple[int, int] | None  # (offset, size) in the file of a segment's payload
    binary: tuple[int, int] | None = None  # a QNN delegate's context binary, (offset, size)
    signature: int | None = None  # the QNN payload header's build clock
    spec: CompileSpec | None = None  # None: no qnn_compile_spec beside it

    @property
    def is_qnn(self) -> bool:
        return self.backend == P.QNN_BACKEND


@dataclass
class PteFile:
    """What the walk found: the header's sizes, the segments as placed in the file, every delegate."""

    path: str
    data: memoryview = field(repr=False)  # the file's bytes (its mapping)
    size: int
    program_size: int
    segment_base: int
    segment_data_size: int
    segments: list[tuple[int, int]]  # (offset, size) in the file
    delegates: list[Delegate] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def entries(self) -> list[tuple[str, tuple[int, int]]]:
        """(name, (offset, size)) for every QNN delegate, in file order: the first name of each binary is
        its entry's, the later ones (another method sharing it, the delegate numbers) address it too."""
        plan, plans = -1, []  # each delegate's method by its place in the program (names may repeat)
        for d in self.delegates:
            plan += d.position == 0
            plans.append(plan)
        qnn = [(p, d) for p, d in zip(plans, self.delegates) if d.is_qnn]
        per_method: dict[int, int] = {}
        for p, _ in qnn:
            per_method[p] = per_method.get(p, 0) + 1
        named = [(self.name_of(d, per_method[p]), d.binary) for p, d in qnn]
        return named + [(str(d.number), d.binary) for _, d in qnn]

    @staticmethod
    def name_of(d: Delegate, in_method: int) -> str:
        """A delegate's name: its method's, `method:i` beside another QNN delegate of that method, its
        number where the method has no name. Methods of one name are as many contexts: the opener labels
        each apart (q9diff.read.labels), escaping what no label holds."""
        if not d.method:
            return str(d.number)
        return d.method if in_method == 1 else f"{d.method}:{d.position}"

    def regions(self) -> list[Region]:
        """Every byte of the file once, in file order: header, program, each segment (a QNN payload's
        header and context binary apart), and what lies between (padding, or unknown where not zero)."""
        out = [
            Region("pte/header", 0, P.PTE_HEADER_SIZE, "structure"),
            Region("pte/program", P.PTE_HEADER_SIZE, self.program_size - P.PTE_HEADER_SIZE, "structure"),
        ]
        users: dict[tuple[int, int], list[Delegate]] = {}
        for d in self.delegates:
            if d.payload is not None:
                users.setdefault(d.payload, []).append(d)
        first = {}
        for k, seg in enumerate(self.segments):
            if seg[1] and seg not in first:
                first[seg] = k
        pos = self.program_size
        for (offset, size), k in sorted(first.items()):
            if offset > pos:
                out.append(self._gap("pte/padding", pos, offset))
            out += self._segment_regions(k, offset, size, users.get((offset, size), []))
            pos = offset + size
        if pos < self.size:
            out.append(self._gap("pte/trailer", pos, self.size))
        return [r for r in out if r.size]

    def _segment_regions(self, k: int, offset: int, size: int, users: list[Delegate]) -> list[Region]:
        qnn = next((d for d in users if d.is_qnn), None)
        name = f"pte/segment[{k}]"
        if qnn is None:
            backend = users[0].backend if users else None
            if backend is not None and not (
                backend.isprintable() and backend.isascii() and "/" not in backend
            ):
                backend = "delegate"  # an id that is no plain name is not put in a region's name
            kind, leaf = ("delegate", f"/{backend}") if backend is not None else ("data", "")
            return [Region(name + leaf, offset, size, kind)]
        b_off, b_size = qnn.binary
        out = [
            Region(f"{name}/qnn_header", offset, b_off - offset, "structure"),
            Region(f"{name}/context_binary", b_off, b_size, "context"),
        ]
        if b_off + b_size < offset + size:
            out.append(self._gap(f"{name}/tail", b_off + b_size, offset + size))
        return out

    def _gap(self, name: str, start: int, end: int) -> Region:
        return Region(name, start, end - start, "padding" if zeros(self.data, start, end) else "unknown")


def read(buf, path: str) -> PteFile:
    """The .pte in `buf` (the file's mapping): FormatError naming the offset and what was expected."""
    size = len(buf)
    h = parse(P.PteHeader, buf, 0, path, "an ExecuTorch .pte header (ET12, then the eh00 extended header)")
    if not P.EXTENDED_HEADER_LENGTH <= h.header_length <= size - P.EXTENDED_HEADER_AT:
        raise FormatError(
            path,
            0x0C,
            f"an extended header of at least {P.EXTENDED_HEADER_LENGTH} bytes inside the file (got"
            f" {h.header_length})",
        )
    if not max(P.PTE_HEADER_SIZE, P.EXTENDED_HEADER_AT + h.header_length) <= h.program_size <= size:
        raise FormatError(
            path,
            0x10,
            f"a program size past the extended header, inside the file of {size} bytes"
            f" (got {h.program_size})",
        )
    if h.segment_base_offset < h.program_size:
        raise FormatError(
            path,
            0x18,
            f"segments placed after the program's {h.program_size} bytes"
            f" (got a segment base of {h.segment_base_offset})",
        )
    if h.segment_base_offset + h.segment_data_size > size:
        raise FormatError(
            path,
            0x20,
            f"segment data inside the file of {size} bytes"
            f" (got {h.segment_data_size} bytes from {h.segment_base_offset})",
        )
    program = flatbuf.root(buf, 0, h.program_size, path)
    pte = PteFile(path, memoryview(buf), size, h.program_size, h.segment_base_offset, h.segment_data_size, [])
    off_grid: list[tuple[int, int]] = []  # (segment, offset) of each segment off executorch's alignment
    for i, s in enumerate(program.get(P.PROGRAM["segments"])):
        off, n = s.get(P.DATA_SEGMENT["offset"], 0), s.get(P.DATA_SEGMENT["size"], 0)
        if off + n > h.segment_data_size:
            raise FormatError(
                path,
                s.pos,
                f"segment {i} inside the {h.segment_data_size} bytes of segment data"
                f" (got {n} bytes at {off})",
            )
        if n and off % P.SEGMENT_ALIGNMENT:
            off_grid.append((i, off))
        pte.segments.append((h.segment_base_offset + off, n))
    pte.notes += [
        f"segment {i} starts at +{off}, not {P.SEGMENT_ALIGNMENT}-aligned as executorch lays them"
        for i, off in off_grid[:MAX_NOTES]
    ]
    if len(off_grid) > MAX_NOTES:
        more = len(off_grid) - MAX_NOTES
        pte.notes.append(f"{more:,d} more segments are not {P.SEGMENT_ALIGNMENT}-aligned")
    placed = sorted({seg for seg in pte.segments if seg[1]})
    for (a, n), (b, m) in zip(placed, placed[1:]):
        if b < a + n:
            raise FormatError(
                path, b, f"segments that are the same or apart (got {n} bytes at {a}, {m} at {b})"
            )
    _delegates(buf, path, program, pte)
    return pte


def _delegates(buf, path: str, program, pte: PteFile) -> None:
    inline = len(program.get(P.PROGRAM["backend_delegate_data"]))
    seen: set[int] = set()  # delegate tables by position: each read once
    headers: dict[int, tuple[tuple[int, int], int]] = {}  # segment index -> (binary, signature)
    specs: dict[int, CompileSpec] = {}  # compile spec value position -> its reading
    for plan in program.get(P.PROGRAM["execution_plan"]):
        method = plan.get(P.EXECUTION_PLAN["name"], "")
        for position, d in enumerate(plan.get(P.EXECUTION_PLAN["delegates"])):
            if d.pos in seen:
                raise FormatError(
                    path, d.pos, f"each delegate listed once (method {shown(method)} lists one again)"
                )
            seen.add(d.pos)
            if len(pte.delegates) >= MAX_DELEGATES:
                raise FormatError(path, d.pos, f"at most {MAX_DELEGATES} delegates")
            pte.delegates.append(_delegate(buf, path, pte, (method, position, d), inline, headers, specs))
    if not any(d.is_qnn for d in pte.delegates):
        backends = sorted({d.backend for d in pte.delegates}) or ["none"]
        raise FormatError(
            path, None, f"a QNN delegate ({P.QNN_BACKEND}); its delegates: {', '.join(backends)}"
        )
    others = [d for d in pte.delegates if not d.is_qnn]
    for d in others[:MAX_NOTES]:
        where = f"{d.location} {d.index}" + (f", {d.payload[1]} bytes" if d.payload else "")
        pte.notes.append(
            f"method {shown(d.method)} delegate {d.position} is {cut(d.backend)} ({where}): listed, not read"
        )
    if len(others) > MAX_NOTES:
        pte.notes.append(f"{len(others) - MAX_NOTES:,d} more delegates of other backends: listed, not read")


def cut(name: str, limit: int = 64) -> str:
    """A name from the file cut to `limit` characters for a message (the one escape comes later)."""
    return name if len(name) <= limit else name[: limit - 1] + "…"


def shown(name: str) -> str:
    """A method's name as a message quotes it: as Python writes it (escaped), cut short."""
    return repr(cut(name))


def _delegate(buf, path: str, pte: PteFile, at: tuple, inline: int, headers: dict, specs: dict) -> Delegate:
    method, position, d = at
    number = len(pte.delegates)
    backend = d.get(P.BACKEND_DELEGATE["id"], "")
    ref = d.get(P.BACKEND_DELEGATE["processed"])
    if ref is None:
        raise FormatError(path, d.pos, f"delegate {number}'s processed data reference")
    location, index = ref.get(P.DATA_REFERENCE["location"], 0), ref.get(P.DATA_REFERENCE["index"], 0)
    if location == P.LOCATION_SEGMENT:
        if index >= len(pte.segments):
            raise FormatError(path, ref.pos, f"a segment index below {len(pte.segments)} (got {index})")
        payload = pte.segments[index]
    elif location == P.LOCATION_INLINE:
        if index >= inline:
            raise FormatError(path, ref.pos, f"an inline data index below {inline} (got {index})")
        payload = None
    else:
        raise FormatError(path, ref.pos, f"a data location of 0 (inline) or 1 (segment) (got {location})")
    where = P.LOCATIONS[location]
    if backend != P.QNN_BACKEND:
        return Delegate(method, position, number, backend, where, index, payload)
    if payload is None:
        raise FormatError(
            path,
            ref.pos,
            f"QNN delegate {number}'s payload in a segment (q9diff reads no inline QNN payload)",
        )
    if index not in headers:
        headers[index] = _payload(buf, path, payload, method)
    binary, signature = headers[index]
    spec = _spec(d, path, specs)
    return Delegate(method, position, number, backend, where, index, payload, binary, signature, spec)


def _payload(buf, path: str, payload: tuple[int, int], method: str) -> tuple[tuple[int, int], int]:
    """A QNN payload's header checked: its magic, and a context binary that starts where the 256-byte
    header ends and fits the segment."""
    offset, size = payload
    header = f"{P.QNN_PAYLOAD_HEADER_SIZE} bytes, magic {P.QNN_PAYLOAD_MAGIC:#x}"
    what = f"the QNN payload header of method {shown(method)} ({header})"
    h = parse(P.QnnPayloadHeader, buf, offset, path, what, end=offset + size)
    if h.binary_size > size - P.QNN_PAYLOAD_HEADER_SIZE:
        raise FormatError(
            path,
            offset + 12,
            f"a context binary inside its {size}-byte segment after the"
            f" {P.QNN_PAYLOAD_HEADER_SIZE}-byte header (got {h.binary_size} bytes)",
        )
    return (offset + P.QNN_PAYLOAD_HEADER_SIZE, h.binary_size), h.signature


def _spec(d, path: str, specs: dict) -> CompileSpec | None:
    """The qnn_compile_spec beside a QNN delegate, read as far as it reads: a value that is not a
    QnnExecuTorchOptions FlatBuffer says so (`problem`) and does not stop the binary from being read."""
    for cs in d.get(P.BACKEND_DELEGATE["compile_specs"]):
        if cs.get(P.COMPILE_SPEC["key"]) != P.QNN_COMPILE_SPEC:
            continue
        vec = cs.raw_vector(P.COMPILE_SPEC["value"].slot)
        if vec is None:
            return CompileSpec(0, problem="no value")
        if vec[0] not in specs:
            specs[vec[0]] = _options(cs.get(P.COMPILE_SPEC["value"]), path)
        return specs[vec[0]]
    return None


def _options(raw: bytes, path: str) -> CompileSpec:
    try:
        options = flatbuf.root(memoryview(raw), 0, len(raw), f"{path}: {P.QNN_COMPILE_SPEC}")
        soc = options.get(P.QNN_OPTIONS["soc_info"])
        htp = soc.get(P.SOC_INFO["htp_info"]) if soc is not None else None
        backend = options.get(P.QNN_OPTIONS["backend_options"])
        kind = backend.get(P.BACKEND_OPTIONS["backend_type"], 0) if backend is not None else None
        opts = backend.get(P.BACKEND_OPTIONS["htp_options"]) if kind == P.HTP_BACKEND else None
        return CompileSpec(
            len(raw),
            soc.get(P.SOC_INFO["soc_model"], 0) if soc is not None else None,
            htp.get(P.HTP_INFO["htp_arch"], 0) if htp is not None else None,
            htp.get(P.HTP_INFO["vtcm_size_in_mb"], 0) if htp is not None else None,
            kind,
            P.PRECISIONS.get(opts.get(P.HTP_OPTIONS["precision"], 0)) if opts is not None else None,
            bool(opts.get(P.HTP_OPTIONS["use_weight_sharing"], 0)) if opts is not None else None,
            bool(opts.get(P.HTP_OPTIONS["use_dlbc"], 0)) if opts is not None else None,
        )
    except FormatError as exc:
        return CompileSpec(len(raw), problem=exc.expected)
