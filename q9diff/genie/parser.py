"""Qualcomm's own verdict on a Genie dialog config: libGenie's config parser, create and free only.

`GenieDialogConfig_createFromJson` checks the text against the JSON schemas libGenie carries and fills
its config object; it opens no file (a ctx-bin that does not exist is accepted: measured on libGenie
1.21 from onnxruntime-qnn 2.7.0) and runs nothing. Its messages go to the process's stderr. The text
is parsed in a child Python started with `-I` in a private folder, as q9diff.fix.extconfig does for
extension files, so a crash of the library cannot take q9diff with it, and q9diff never copies the
schema. Loading follows q9diff.runners.genie: libQnnSystem and libQnnHtp first, RTLD_GLOBAL.

This module is also the child's script: it imports nothing outside the standard library.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

LIBRARY = "libGenie.so"
PRELOAD = ("libQnnSystem.so", "libQnnHtp.so")
TIMEOUT_S = 60
# libGenie's parser takes time that grows with the square of the text (measured on 2.51: a config of
# empty objects takes 0.3 s at 16 KB, 2.6 s at 64 KB, over 20 s at 300 KB); real configs are 1-2 KB.
MAX_TEXT_BYTES = 32 << 10
# GenieCommon.h status codes the parser returns.
STATUS_NAMES = {
    0: "SUCCESS",
    -2: "INVALID_ARGUMENT",
    -4: "INVALID_CONFIG",
    -7: "JSON_FORMAT",
    -8: "JSON_SCHEMA",
}
STATUS_NAMES.update({-9: "JSON_VALUE", -1: "GENERAL", -3: "MEM_ALLOC"})


@dataclass(frozen=True)
class Verdict:
    """libGenie's answer: its status name and the lines it printed (empty when it accepted the text)."""

    status: str
    errors: tuple[str, ...]

    @property
    def accepted(self) -> bool:
        return self.status == "SUCCESS"


class Unavailable(RuntimeError):
    """libGenie cannot be asked here (not installed, not Linux x86_64, or it did not answer)."""


def library_dir() -> Path:
    """The onnxruntime-qnn folder holding libGenie and the QNN libraries, found without importing it."""
    import importlib.util

    spec = importlib.util.find_spec("onnxruntime_qnn")
    for where in (spec.submodule_search_locations or []) if spec else []:
        if all((Path(where) / lib).is_file() for lib in (LIBRARY, *PRELOAD)):
            return Path(where)
    raise Unavailable(f"onnxruntime-qnn with {LIBRARY} is not installed")


def check(text: str) -> Verdict:
    """libGenie's verdict on one dialog config text; Unavailable if it cannot be asked, or is not asked
    because the text is over MAX_TEXT_BYTES (checked before anything is handed to it)."""
    from q9diff.guard import ask_script  # the parent only: the child runs this file with the stdlib alone

    size = len(text.encode("utf-8"))
    if size > MAX_TEXT_BYTES:
        raise Unavailable(
            f"the config is {size} bytes, over the {MAX_TEXT_BYTES} q9diff hands {LIBRARY}, whose parser's "
            "time grows with the square of the size"
        )
    lib = library_dir()
    with tempfile.TemporaryDirectory(prefix="q9diff-genieconfig-") as tmp:
        config = Path(tmp) / "genie_config.json"
        config.write_text(text, encoding="utf-8")
        answer, run = ask_script(__file__, [str(lib), str(config)], tmp, TIMEOUT_S, LIBRARY, Unavailable)
    try:
        status = int(answer["status"])
    except (KeyError, TypeError, ValueError):
        raise Unavailable(f"{LIBRARY} answered without a status (exit status {run.returncode})") from None
    lines = [_tidy(ln) for ln in run.stderr.splitlines() if ln.strip() and "LIBNATIVE" not in ln]
    name = STATUS_NAMES.get(status, str(status))
    return Verdict(name, () if status == 0 else tuple(dict.fromkeys(ln[:400] for ln in lines)))


def _tidy(line: str) -> str:
    """One message line without its repetitions: libGenie nests "Failed to validate ...: " prefixes and
    repeats " - at least one subschema has failed ..." once per schema level."""
    line = re.sub(r"(([^:]+: ))\1+", r"\1", " ".join(line.split()))
    return " - ".join(dict.fromkeys(line.split(" - ")))


def _child(lib_dir: str, config: str) -> int:
    import ctypes

    for lib in PRELOAD:
        ctypes.CDLL(os.path.join(lib_dir, lib), mode=ctypes.RTLD_GLOBAL)
    genie = ctypes.CDLL(os.path.join(lib_dir, LIBRARY))
    handle = ctypes.c_void_p()
    genie.GenieDialogConfig_createFromJson.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
    genie.GenieDialogConfig_createFromJson.restype = ctypes.c_int32
    genie.GenieDialogConfig_free.argtypes = [ctypes.c_void_p]
    genie.GenieDialogConfig_free.restype = ctypes.c_int32
    with open(config, "rb") as f:
        status = genie.GenieDialogConfig_createFromJson(f.read(), ctypes.byref(handle))
    if handle:
        genie.GenieDialogConfig_free(handle)
    return int(status)


if __name__ == "__main__":
    result = _child(sys.argv[1], sys.argv[2])
    sys.stderr.flush()
    sys.stdout.write("\n" + json.dumps({"status": result}) + "\n")
    sys.stdout.flush()
    os._exit(0)  # the library's static destructors are not ours to run
