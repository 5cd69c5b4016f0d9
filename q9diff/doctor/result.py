"""What doctor found (`DoctorResult`, its findings and the nine hypotheses), apart from the engine that
finds it (q9diff.doctor.run): what every presenter and the Python API's `DoctorReport` read, and what a
report saved with --json gives back, with nothing of the bundle, the checks or numpy imported.
"""

from __future__ import annotations

from dataclasses import dataclass

SCHEMA = "q9diff.doctor/1"

SEVERITIES = ("error", "warning", "info")

HYPOTHESES: dict[int, str] = {
    1: "split count / graph names differ from the reference",
    2: "parts from different QAIRT builds",
    3: "n-vocab does not match the model",
    4: "embedding (Gather) encodings dropped",
    5: "float fallback",
    6: "VTCM 4 vs 8 MiB",
    7: "reference quantized with --quantize_full_type w8a16 --quantize_io",
    8: "weights not packed",
    9: "soc_model 0 (generic target)",
}


@dataclass(frozen=True)
class Finding:
    check: str
    severity: str
    hypothesis: int | None
    where: str
    evidence: str
    fix: str | None
    ruled_out: bool = False

    def to_json(self) -> dict:
        return {k: getattr(self, k) for k in ("check", "severity", "hypothesis", "where", "evidence", "fix")}


@dataclass(frozen=True)
class DoctorResult:
    """What every presenter of doctor reads (terminal, JSON, HTML), with no bundle open: a report
    saved with --json gives it back (`from_json`)."""

    bundle: str
    reference: str | None
    notes: tuple[str, ...]
    findings: tuple[Finding, ...]
    # --target: the device as `Device.to_json` gives it, and AI Hub's profile sentence and sources
    target: dict | None = None
    profile: dict | None = None
    runtime: dict | None = None  # the runtime the load verdict is for (Runtime.to_json)

    def count(self, severity: str) -> int:
        return sum(1 for f in self.findings if f.severity == severity and not f.ruled_out)

    @property
    def exit_code(self) -> int:
        return 1 if self.count("error") else 0

    def hypotheses(self) -> dict[int, dict]:
        """Per hypothesis: implicated (a problem), ruled out (every check of it passed) or open."""
        out = {}
        for n, title in HYPOTHESES.items():
            mine = [f for f in self.findings if f.hypothesis == n]
            problems = [f for f in mine if f.severity != "info"]
            if problems:
                status, why = "implicated", [f.evidence for f in problems]
            elif mine and all(f.ruled_out for f in mine):
                status, why = "ruled out", [f.evidence for f in mine]
            else:
                status, why = "open", [f.evidence for f in mine if not f.ruled_out] or ["no check ran"]
            out[n] = {"title": title, "status": status, "why": why}
        return out

    def to_json(self) -> dict:
        return (
            {
                "schema": SCHEMA,
                "bundle": self.bundle,
                "reference": self.reference,
                "findings": [f.to_json() for f in self.findings],
                "hypotheses": {str(k): v for k, v in self.hypotheses().items()},
                "notes": list(self.notes),
                "passed": [i for i, f in enumerate(self.findings) if f.ruled_out],  # the checks that passed
            }
            | ({} if self.target is None else {"target": self.target, "profile": self.profile})
            | ({} if self.runtime is None else {"runtime": self.runtime})
        )

    @classmethod
    def from_json(cls, data: dict) -> DoctorResult:
        """From a saved report whose shape was checked (q9diff.present.saved)."""
        passed = set(data.get("passed", []))
        findings = tuple(
            Finding(
                f["check"], f["severity"], f["hypothesis"], f["where"], f["evidence"], f["fix"], i in passed
            )
            for i, f in enumerate(data["findings"])
        )
        target, profile = data.get("target"), data.get("profile")
        notes = tuple(data["notes"])
        return cls(data["bundle"], data["reference"], notes, findings, target, profile, data.get("runtime"))
