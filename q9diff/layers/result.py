"""What `q9diff layers` found, as frozen values that save as `q9diff.layers/1` and load back (`q9diff report`
draws a saved result again from its JSON alone)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from q9diff.layers.figures import Figures, Rule, to_word

SCHEMA = "q9diff.layers/1"


@dataclass(frozen=True)
class Finding:
    """What the static look at the QDQ model's encodings found (q9diff.layers.encodings)."""

    kind: str  # "bit_width" or "qdq_mismatch"
    tensor: str  # the tensor quantized (the QuantizeLinear's input, the weight's initializer)
    node: str  # the QuantizeLinear or DequantizeLinear concerned
    text: str  # the finding in words

    def to_json(self) -> dict:
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, d: dict) -> Finding:
        return cls(d["kind"], d["tensor"], d["node"], d["text"])


@dataclass(frozen=True)
class CpuOnly:
    """A tensor whose own error on the CPU is below its allowance while the HTP build's is not."""

    tensor: str
    cpu_db: float  # the CPU run's local SQNR of it
    htp_db: float  # the HTP build's
    why: str  # what the encodings say ('' when they say nothing)

    def to_json(self) -> dict:
        return {k: to_word(v) for k, v in self.__dict__.items()}

    @classmethod
    def from_json(cls, d: dict) -> CpuOnly:
        return cls(d["tensor"], float(d["cpu_db"]), float(d["htp_db"]), d["why"])


@dataclass(frozen=True)
class Row:
    """One source tensor compared: where it is in the candidate's graph order, in which compile it was
    tapped, and its figures (None: the two sides shape it differently). `resolved`: its own error was
    recomputed from measured tensors alone, so the rule judges it (a block's, in a narrowed run, is not)."""

    tensor: str
    node: str
    op: str
    order: int
    stage: int
    figures: Figures | None
    resolved: bool = True

    def to_json(self) -> dict:
        return {
            "tensor": self.tensor,
            "node": self.node,
            "op": self.op,
            "order": self.order,
            "stage": self.stage,
            "figures": None if self.figures is None else self.figures.to_json(),
            "resolved": self.resolved,
        }

    @classmethod
    def from_json(cls, d: dict) -> Row:
        f = d["figures"]
        return cls(
            d["tensor"],
            d["node"],
            d["op"],
            d["order"],
            d["stage"],
            None if f is None else Figures.from_json(f),
            bool(d["resolved"]),
        )


@dataclass(frozen=True)
class Untapped:
    """A tensor with no tap: fused away by the quantizer or the compiler, or left unquantized; the tapped
    tensor computed from it that stands in (None: none is)."""

    tensor: str
    node: str
    op: str
    side: str  # whose graph holds it: "reference" (the float model) or "candidate"
    stand_in: str | None

    def to_json(self) -> dict:
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, d: dict) -> Untapped:
        return cls(d["tensor"], d["node"], d["op"], d["side"], d["stand_in"])


@dataclass(frozen=True)
class Compile:
    """One compile: which side, what for, its taps, the binary, whether the cache had it; for a tapped
    candidate build, where it differs from the untapped build (q9diff's diff of the two binaries: sizes,
    ops, the diff's words) and how far its graph outputs are from the untapped build's on the same inputs."""

    side: str
    label: str
    taps: int
    binary: str
    size: int
    cached: bool
    seconds: float
    vs_untapped: dict | None = None  # {"size": [a, b], "ops": [a, b], "words": [...], "outputs": figures}

    def to_json(self) -> dict:
        out = dict(self.__dict__)
        if self.vs_untapped is not None and isinstance(self.vs_untapped.get("outputs"), Figures):
            out["vs_untapped"] = {**self.vs_untapped, "outputs": self.vs_untapped["outputs"].to_json()}
        return out

    @classmethod
    def from_json(cls, d: dict) -> Compile:
        vs = d.get("vs_untapped")
        if vs is not None and vs.get("outputs") is not None:
            vs = {**vs, "outputs": Figures.from_json(vs["outputs"])}
        return cls(d["side"], d["label"], d["taps"], d["binary"], d["size"], d["cached"], d["seconds"], vs)


@dataclass(frozen=True)
class Divergence:
    """The first tensor whose error stands out, with the noise of the tensors before it."""

    graph: str
    tensor: str
    node: str
    op: str
    figures: Figures
    before_sqnr_db: float  # the noise the nodes before it add: the rule's percentile of their local SQNRs
    before_cosine: float  # the lowest cosine of the tensors before it
    previous: str | None  # the tensor measured just before it
    allowance_db: float = math.nan  # the local SQNR below which the rule calls this tensor a divergence
    borderline: bool = False  # its own error is within the rule's borderline band of that allowance

    def to_json(self) -> dict:
        f = self.figures
        return {
            "graph": self.graph,
            "tensor": self.tensor,
            "node": self.node,
            "op": self.op,
            "cosine": to_word(f.cosine),
            "max_abs": to_word(f.max_abs),
            "sqnr_db": to_word(f.sqnr_db),
            "rel": to_word(f.rel),
            "steps": to_word(f.steps),
            "local_sqnr_db": to_word(f.local_sqnr_db),
            "local_nodes": f.local_nodes,
            "before": {"sqnr_db": to_word(self.before_sqnr_db), "cosine": to_word(self.before_cosine)},
            "previous": self.previous,
            "allowance_db": to_word(self.allowance_db),
            "borderline": self.borderline,
        }

    @classmethod
    def from_json(cls, d: dict) -> Divergence:
        f = Figures.from_json(d)
        b = d["before"]
        return cls(
            d["graph"],
            d["tensor"],
            d["node"],
            d["op"],
            f,
            float(b["sqnr_db"]),
            float(b["cosine"]),
            d.get("previous"),
            float(d.get("allowance_db", math.nan)),
            bool(d.get("borderline", False)),
        )


@dataclass(frozen=True)
class GraphLayers:
    """One graph of the candidate against its reference."""

    graph: str
    part: str
    model: str
    reference: str
    inputs: dict  # {"source": "npz" | "seeded" | "genie", "detail": str}
    rows: tuple[Row, ...]
    untapped: tuple[Untapped, ...]
    unmatched: tuple[str, ...]  # candidate taps the reference has no tensor for
    tappable: int  # tensors both sides have: what a run could compare
    compiles: tuple[Compile, ...]
    first_divergence: Divergence | None
    notes: tuple[str, ...] = ()  # what this graph's run could not do (a local error not recomputed)
    # the tensor whose own error lies furthest below its allowance (None: none below it), and, with no
    # divergence, the first within the borderline band above its allowance
    worst: Divergence | None = None
    near: Divergence | None = None
    encodings: tuple[Finding, ...] = ()  # the static look at the QDQ model's encodings
    cpu: tuple[CpuOnly, ...] = ()  # tensors that diverge on the CPU and not on the HTP

    def to_json(self) -> dict:
        return {
            "graph": self.graph,
            "part": self.part,
            "model": self.model,
            "reference": self.reference,
            "inputs": self.inputs,
            "tappable": self.tappable,
            "measured": len(self.rows),
            "first_divergence": None if self.first_divergence is None else self.first_divergence.to_json(),
            "tensors": [r.to_json() for r in self.rows],
            "untapped": [u.to_json() for u in self.untapped],
            "unmatched": list(self.unmatched),
            "compiles": [c.to_json() for c in self.compiles],
            "notes": list(self.notes),
            "worst": None if self.worst is None else self.worst.to_json(),
            "near": None if self.near is None else self.near.to_json(),
            "encodings": [f.to_json() for f in self.encodings],
            "cpu": [c.to_json() for c in self.cpu],
        }

    @classmethod
    def from_json(cls, d: dict) -> GraphLayers:
        fd = d["first_divergence"]
        return cls(
            d["graph"],
            d["part"],
            d["model"],
            d["reference"],
            d["inputs"],
            tuple(Row.from_json(r) for r in d["tensors"]),
            tuple(Untapped.from_json(u) for u in d["untapped"]),
            tuple(d["unmatched"]),
            d["tappable"],
            tuple(Compile.from_json(c) for c in d["compiles"]),
            None if fd is None else Divergence.from_json(fd),
            tuple(d.get("notes", ())),
            None if d.get("worst") is None else Divergence.from_json(d["worst"]),
            None if d.get("near") is None else Divergence.from_json(d["near"]),
            tuple(Finding.from_json(f) for f in d.get("encodings", ())),
            tuple(CpuOnly.from_json(c) for c in d.get("cpu", ())),
        )


@dataclass(frozen=True)
class LayersResult:
    """Every graph of the candidate compared, the rule that judged them, what ran where."""

    candidate: str
    reference: str
    runs: dict  # {"candidate": where it ran, "reference": where it ran}
    rule: Rule
    graphs: tuple[GraphLayers, ...]
    notes: tuple[str, ...]
    seconds: float

    @property
    def first_divergence(self) -> Divergence | None:
        return next((g.first_divergence for g in self.graphs if g.first_divergence is not None), None)

    @property
    def passed(self) -> bool:
        return self.first_divergence is None

    @property
    def compiles(self) -> tuple[Compile, ...]:
        return tuple(c for g in self.graphs for c in g.compiles)

    def to_json(self) -> dict:
        fd = self.first_divergence
        return {
            "schema": SCHEMA,
            "candidate": self.candidate,
            "reference": self.reference,
            "runs": dict(self.runs),
            "rule": self.rule.to_json(),
            "first_divergence": None if fd is None else fd.to_json(),
            "compiles": {"total": len(self.compiles), "cached": sum(c.cached for c in self.compiles)},
            "seconds": round(self.seconds, 1),
            "graphs": [g.to_json() for g in self.graphs],
            "notes": list(self.notes),
        }

    @classmethod
    def from_json(cls, d: dict) -> LayersResult:
        return cls(
            d["candidate"],
            d["reference"],
            d["runs"],
            Rule.from_json(d["rule"]),
            tuple(GraphLayers.from_json(g) for g in d["graphs"]),
            tuple(d["notes"]),
            float(d["seconds"]),
        )
