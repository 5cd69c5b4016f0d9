"""Will a context binary load on a runtime and a device? The rules, each a row with its evidence, and the
engine that applies them to what a binary records.

Verdicts, worst first: `will not load` (the runtime refuses it, with the error it prints), `loads,
recompile advised` (it loads, but was built for another arch, VTCM or SoC than the device's), `loads`.
Each rule says what decides it (the binary's field), the error the runtime prints, how that is known --
measured here on Qualcomm's runtimes (scripts/measure_compat.py, q9diff/load/compat_measured.json),
documented (Qualcomm's libraries carry the message; ONNX Runtime's cache compatibility rules; maintainers
in public threads) -- and whether the x86 emulator can show it. A rule whose inputs are not read (a device
whose VTCM no source documents, a binary that records no arch) is listed as not judged, never guessed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from q9diff.load.runtime import Runtime, measured
from q9diff.read.tables import Device, soc_name

WILL_NOT_LOAD, RECOMPILE, LOADS = "will not load", "loads, recompile advised", "loads"
ORDER = (WILL_NOT_LOAD, RECOMPILE, LOADS)
ORT_RULE = (
    "ONNX Runtime's QNN EP cache compatibility rules (onnxruntime-qnn): a binary whose backend API is newer"
    " than the runtime's, whose arch is above the device's (or below 73 on a 73+ device), or whose VTCM is"
    " above the device's is unsupported; same arch and VTCM is optimal, anything else 'supported, prefer"
    " recompilation'"
)
NOT_ON_EMULATOR = "the x86 emulator does not show it (it runs the arch the binary records; measured)"


@dataclass(frozen=True)
class Facts:
    """What a binary records that a load depends on; None where it records nothing."""

    build: tuple[int, int] | None  # QAIRT major.minor of its build id
    build_id: str
    backend_api: tuple[int, int] | None
    dsp_arch: int | None
    min_arch: int | None  # the options' min_arch: the arch the runtime requires of the device
    soc_model: int | None  # the soc_model the build asked for (0: the generic target)
    vtcm_size: int | None  # bytes, the largest over its graphs

    @classmethod
    def of(cls, cb) -> Facts:
        opts = cb.options(0) if cb.graphs else {}
        m = re.match(r"v(\d+)\.(\d+)\.", cb.build_id or "")
        api = _pair(cb.backend_api_version)
        vtcms = [g.vtcm_size for g in cb.graphs if g.vtcm_size]
        min_arch = opts.get("min_arch", "")
        return cls(
            (int(m.group(1)), int(m.group(2))) if m else None,
            cb.build_id,
            api,
            cb.dsp_arch,
            int(min_arch) if min_arch.isdigit() else None,
            cb.requested.soc_model,
            max(vtcms) if vtcms else None,
        )


def _pair(version: str | None) -> tuple[int, int] | None:
    parts = (version or "").split(".")
    return (int(parts[0]), int(parts[1])) if len(parts) >= 2 and all(p.isdigit() for p in parts[:2]) else None


@dataclass(frozen=True)
class Finding:
    rule: str
    verdict: str
    decides: str  # the binary's field that decides it
    evidence: str  # the values, and how the rule is known
    error: str | None  # what the runtime prints when it refuses
    code: int | None
    fix: str | None
    emulator: bool  # whether the x86 emulator shows it (else only a device, or documentation)

    def to_json(self) -> dict:
        keys = ("rule", "verdict", "decides", "evidence", "error", "code", "fix", "emulator")
        return {k: getattr(self, k) for k in keys}


@dataclass(frozen=True)
class Verdict:
    """One binary on one runtime and device: the worst of its findings (`loads` when none fired)."""

    part: str
    verdict: str
    findings: tuple[Finding, ...]
    not_judged: tuple[str, ...]
    runtime: Runtime | None
    device: Device | None = field(default=None, compare=False)

    def to_json(self) -> dict:
        return {
            "part": self.part,
            "verdict": self.verdict,
            "findings": [f.to_json() for f in self.findings],
            "not_judged": list(self.not_judged),
            "runtime": None if self.runtime is None else self.runtime.to_json(),
            "device": None if self.device is None else self.device.name,
        }


class Unread(Exception):
    """A rule's input is not read: the rule is not judged, and this says why."""


def gate_counts() -> tuple[int, int, int, int, str]:
    """What the backend API gate did on the runtimes measured (compat_measured.json): attempts with a
    binary newer than the runtime and how many were refused, attempts with one not newer (weights not
    shared: the x86 emulator refuses shared weights for its own reason) and how many loaded, and the
    runtimes' span."""
    data = measured()
    runtimes = {
        r["qairt"]: tuple(r["backend_api"][:2]) for r in data.get("runtimes", []) if r.get("backend_api")
    }
    binaries = {b["name"]: b for b in data.get("binaries", [])}
    newer = refused = older = loaded = 0
    for a in data.get("attempts", []):
        b, api = binaries.get(a["binary"]), runtimes.get(a["runtime"])
        if a.get("options") or b is None or api is None or not b.get("backend_api"):
            continue
        if tuple(b["backend_api"][:2]) > api:
            newer += 1
            refused += not a["loaded"] and 5000 in a.get("codes", [])
        elif not b.get("shared_weights"):
            older += 1
            loaded += bool(a["loaded"])
    names = sorted(runtimes, key=lambda v: tuple(int(x) for x in v.split(".")))
    span = f"QAIRT {names[0]}-{names[-1]}" if names else "no runtime"
    return newer, refused, older, loaded, span


def _gate_evidence() -> str:
    newer, refused, older, loaded, span = gate_counts()
    return (
        f"measured on {span}: {refused} of {newer} loads of a newer binary refused with 5000, {loaded} of"
        f" {older} of an older one loaded (scripts/measure_compat.py); documented: ai-hub-apps#148,"
        " executorch#4155 ('not forward compatible'), ONNX Runtime's cache compatibility rule"
    )


# ---- the rules: (id, verdict, decides, the error, code, fix, emulator shows it, needs, check) --------------
# A check returns the evidence sentence when the rule fires, None when it does not, and raises Unread when
# it cannot say.


def _runtime_api(f: Facts, rt: Runtime, d: Device | None) -> str | None:
    if f.backend_api is None or rt.backend_api is None:
        side = (
            "the binary's is not recorded" if f.backend_api is None else f"the runtime's is {rt.api_evidence}"
        )
        raise Unread(f"backend API: {side}; judged by the QAIRT versions instead")
    ba, ra = f.backend_api, rt.backend_api
    if ba[0] == ra[0] and ba[1] <= ra[1]:
        return None
    return (
        f"backend API {ba[0]}.{ba[1]} (built by {f.build_id}) is newer than {rt.label}'s {ra[0]}.{ra[1]}"
        f" ({rt.api_evidence.split(': ', 1)[0]}); {_gate_evidence()}"
    )


def _runtime_qairt(f: Facts, rt: Runtime, d: Device | None) -> str | None:
    if f.backend_api is not None and rt.backend_api is not None:
        return None  # the backend API rule judged it
    if f.build is None:
        raise Unread(f"the build id {f.build_id!r} names no QAIRT version")
    if f.build <= rt.qairt[:2]:
        return None
    return (
        f"built by QAIRT {f.build[0]}.{f.build[1]} ({f.build_id}), newer than {rt.label}; documented: the"
        " runtime must be at least the QAIRT that built the asset (ai-hub-apps#148, executorch#4155)"
    )


def _need_arch(f: Facts, d: Device) -> tuple[int, int]:
    need = f.min_arch or f.dsp_arch
    if need is None:
        raise Unread("the binary records no dsp_arch")
    if d.dsp_arch is None:
        raise Unread(f"{d.name}'s dsp_arch is not in q9diff's SoC table")
    return need, d.dsp_arch


def _arch_above(f: Facts, rt, d: Device) -> str | None:
    need, have = _need_arch(f, d)
    if need <= have:
        return None
    which = "min_arch" if f.min_arch else "dspArch"
    return (
        f"the binary's {which} is v{need}; {d.name} is v{have}; documented: libQnnHtp.so's own check"
        f" ('Pickle requires min_arch {need}, got {have}') and {ORT_RULE.split(': ', 1)[0]};"
        f" {NOT_ON_EMULATOR}"
    )


def _arch_old(f: Facts, rt, d: Device) -> str | None:
    need, have = _need_arch(f, d)
    arch = f.dsp_arch or need
    if not (arch < 73 <= have):
        return None
    return (
        f"the binary is v{arch}; {d.name} is v{have}: {ORT_RULE.split(': ', 1)[0]} marks a binary below v73"
        f" unsupported on a v73+ device; QNN alone on such a device: not measured; {NOT_ON_EMULATOR}"
    )


def _hmx(f: Facts, rt, d: Device) -> str | None:
    if f.dsp_arch != 81:
        return None
    if f.soc_model is None:
        raise Unread("the binary's soc_model is not read")
    if d.accepts(f.soc_model):
        return None
    return (
        f"a v81 binary built for soc_model {f.soc_model} ({soc_name(f.soc_model)}) on soc_model {d.soc_model}"
        f" ({d.part}): measured on the emulator (QAIRT 2.51), a v81 binary refuses any other soc_model or"
        " htp_arch"
    )


def _vtcm(f: Facts, d: Device) -> tuple[int, int]:
    if f.vtcm_size is None:
        raise Unread("the binary records no VTCM size")
    if d.vtcm_mb is None:
        raise Unread(f"{d.name}'s VTCM is documented by no source q9diff trusts for it")
    return f.vtcm_size, d.vtcm_mb << 20


def _vtcm_above(f: Facts, rt, d: Device) -> str | None:
    need, have = _vtcm(f, d)
    if need <= have:
        return None
    return (
        f"the binary needs VTCM {need >> 20} MiB; {d.name} has {have >> 20} MiB (documented); libQnnHtp.so"
        f" checks it ('Deserialize VTCM check failed. Hardware size {have}, pickle needs {need}') and"
        f" {ORT_RULE.split(': ', 1)[0]} marks it unsupported; the emulator ignores it (it always has 8 MiB;"
        " measured)"
    )


def _arch_below(f: Facts, rt, d: Device) -> str | None:
    need, have = _need_arch(f, d)
    arch = f.dsp_arch or need
    if not (73 <= arch < have):
        return None
    return (
        f"the binary is v{arch}; {d.name} is v{have}: {ORT_RULE.split(': ', 1)[0]} says 'supported, prefer"
        " recompilation'; Qualcomm: a binary for another HTP arch 'may give indeterminate result'"
    )


def _vtcm_below(f: Facts, rt, d: Device) -> str | None:
    need, have = _vtcm(f, d)
    if need >= have:
        return None
    return (
        f"the binary uses VTCM {need / (1 << 20):g} MiB of {d.name}'s {have >> 20} MiB:"
        f" {ORT_RULE.split(': ', 1)[0]} calls anything but the device's VTCM 'supported, prefer"
        " recompilation'; it runs slower than it could"
    )


def _soc(f: Facts, rt, d: Device) -> str | None:
    if f.soc_model is None:
        raise Unread("the soc_model the build asked for is not read")
    if f.soc_model == 0:
        return (
            f"built for soc_model 0 (the generic target): {d.name} does not refuse it for that, and it may"
            " compute garbage there, the case q9diff was born from (QAIRT 2.42: soc_model 0 vs 77)"
        )
    if d.accepts(f.soc_model) or f.dsp_arch == 81:
        return None  # v81 on another SoC is _hmx's
    return (
        f"built for soc_model {f.soc_model} ({soc_name(f.soc_model)}); {d.name} is soc_model {d.soc_model}:"
        " the compiler schedules and tiles for the SoC it is given"
    )


@dataclass(frozen=True)
class Rule:
    id: str
    verdict: str
    decides: str
    error: str | None
    code: int | None
    fix: str
    emulator: bool
    needs: str  # "runtime" or "device"
    check: Callable


RUNTIME, DEVICE = "runtime", "device"
_REFUSED_5000 = (
    "'Using newer context binary on old SDK', then err 5000 (QNN_CONTEXT_ERROR_INVALID_ARGUMENT; Genie:"
    " 'Could not create context from binary ... err 5000')"
)
# fmt: off
RULES: tuple[Rule, ...] = (
    Rule("load.runtime", WILL_NOT_LOAD, "backendApiVersion", _REFUSED_5000, 5000,
         "rebuild with QAIRT {runtime} or older, or ship the QAIRT {build} runtime (libQnnHtp.so with its"
         " Stub and Skel, libGenie.so) with the app", True, RUNTIME, _runtime_api),
    Rule("load.runtime-version", WILL_NOT_LOAD, "buildId", _REFUSED_5000, 5000,
         "rebuild with QAIRT {runtime} or older, or ship the QAIRT {build} runtime with the app", True,
         RUNTIME, _runtime_qairt),
    Rule("load.arch", WILL_NOT_LOAD, "min_arch / dspArch", "libQnnHtp: 'Pickle requires min_arch N, got M'",
         None, "rebuild with dsp_arch v{device_arch} (soc_model {device_soc})", False, DEVICE, _arch_above),
    Rule("load.arch-below-73", WILL_NOT_LOAD, "dspArch", "ONNX Runtime: the cached context is unsupported",
         None, "rebuild with dsp_arch v{device_arch} (soc_model {device_soc})", False, DEVICE, _arch_old),
    Rule("load.hmx", WILL_NOT_LOAD, "dspArch, socModel",
         "'Can't run HMX in background due to lack of HMX thread(s)', then err 5005"
         " (QNN_CONTEXT_ERROR_CREATE_FROM_BINARY)", 5005,
         "rebuild for soc_model {device_soc}", True, DEVICE, _hmx),
    Rule("load.vtcm", WILL_NOT_LOAD, "graphBlobInfo.vtcmSize",
         "libQnnHtp: 'Deserialize VTCM check failed. Hardware size H, pickle needs P'", None,
         "rebuild with vtcm_mb {device_vtcm} (what {device} has)", False, DEVICE, _vtcm_above),
    Rule("load.arch-other", RECOMPILE, "dspArch", None, None,
         "rebuild with dsp_arch v{device_arch} (soc_model {device_soc})", False, DEVICE, _arch_below),
    Rule("load.vtcm-other", RECOMPILE, "graphBlobInfo.vtcmSize", None, None,
         "rebuild with vtcm_mb {device_vtcm}", False, DEVICE, _vtcm_below),
    Rule("load.soc", RECOMPILE, "socModel", None, None,
         "rebuild with soc_model {device_soc} (dsp_arch v{device_arch})", False, DEVICE, _soc),
)
# fmt: on


def judge(cb, part: str, runtime: Runtime | None, device: Device | None) -> Verdict:
    """One binary on `runtime` and `device` (either may be None: its rules are then not run)."""
    facts = Facts.of(cb)
    found, unread = [], []
    for rule in RULES:
        if (rule.needs == RUNTIME and runtime is None) or (rule.needs == DEVICE and device is None):
            continue
        try:
            why = rule.check(facts, runtime, device)
        except Unread as exc:
            unread.append(f"{rule.id}: {exc}")
            continue
        if why is not None:
            found.append(Finding(rule.id, rule.verdict, rule.decides, why, rule.error, rule.code,
                                 _fix(rule.fix, facts, runtime, device), rule.emulator))  # fmt: skip
    verdict = min((f.verdict for f in found), key=ORDER.index, default=LOADS)
    return Verdict(part, verdict, tuple(found), tuple(unread), runtime, device)


def _fix(template: str, f: Facts, rt: Runtime | None, d: Device | None) -> str:
    values = {
        "runtime": rt.label.split(" ", 1)[1] if rt else "?",
        "build": f"{f.build[0]}.{f.build[1]}" if f.build else "?",
        "device": d.name if d else "?",
        "device_arch": d.dsp_arch if d else "?",
        "device_soc": d.soc_model if d else "?",
        "device_vtcm": d.vtcm_mb if d else "?",
    }
    return template.format(**values)
