"""Will each part of a build load on a runtime and a device: the rules (q9diff.load.rules) over every part,
the worst verdict first, as a report's `load`."""

from __future__ import annotations

from collections.abc import Sequence

from q9diff.load.runtime import Runtime
from q9diff.read.openers import Part
from q9diff.read.tables import Device


def load_verdicts(parts: Sequence[Part], device: Device | None, runtime: Runtime | None) -> dict | None:
    """Will each of `parts` load on `runtime` and `device`: the worst verdict and each part's, as the
    JSON's `load`; None when neither is named."""
    if device is None and runtime is None:
        return None
    from q9diff.load.rules import ORDER, judge  # start-up: the rules' measured data, where one is named

    verdicts = []
    for p in parts:
        cb = p.open()
        verdicts.append(judge(cb, p.path.name, runtime, device).to_json())
        cb.release()
    worst = min((v["verdict"] for v in verdicts), key=ORDER.index)
    return {
        "verdict": worst,
        "runtime": None if runtime is None else runtime.to_json(),
        "device": None if device is None else device.name,
        "parts": verdicts,
    }
