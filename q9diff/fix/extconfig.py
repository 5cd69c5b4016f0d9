"""Qualcomm's own verdict on a backend extension config: `libQnnHtpNetRunExtensions.so` parses it.

That library (shipped in onnxruntime-qnn) is what qnn-net-run and qnn-context-binary-generator load to
read `htp_backend_ext_config.json`: it checks the file against the JSON schema it carries and, when the
graphs are composed, that every graph setting has `graph_names`. q9diff asks it directly instead of
copying its rules: each text is written to a private folder and parsed in a child Python started with
`-I` (no working directory, user site or environment on its path) in that folder, so a crash of the
library, or a file beside the config, cannot take q9diff with it.

The library exports `createBackendInterface()`, returning a C++ object whose virtual functions the
tools call in turn. Measured on onnxruntime-qnn 2.7.0 (QNN 2.51, x86_64) by disassembly and by running
it: slot 2 sets the log callback, slot 3 initializes from a `dlopen` handle of libQnnHtp.so, slot 7
loads a config file (a libc++ `std::string` path) and slot 13 composes the graph settings. The child
probes both calls on files whose answer is known before it trusts them; if the probe fails (another
library version), validation is reported unavailable, never guessed.

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

LIBRARY = "libQnnHtpNetRunExtensions.so"
HTP_LIBRARY = "libQnnHtp.so"
CONFIG_NAME = "config.json"  # every text is parsed under this name, so messages compare across texts
TIMEOUT_S = 60
MAX_TEXT_BYTES = 1 << 20  # what q9diff reads as a config (q9diff.jsonc.MAX_TEXT); real files are < 1 KB

# Virtual function slots of the object createBackendInterface() returns (see the module docstring).
SLOT_SETUP_LOGGING, SLOT_INITIALIZE, SLOT_LOAD_CONFIG, SLOT_COMPOSE_GRAPHS = 2, 3, 7, 13
LOG_ERROR = 1  # QnnLog_Level_t QNN_LOG_LEVEL_ERROR


@dataclass(frozen=True)
class Verdict:
    """What the library said about one text: its error messages (each on one line), empty when clean."""

    errors: tuple[str, ...]


# The parser's schema complaint, e.g. `Schema error: #/graphs{"type":{"expected":["array"],"actual":
# "object",...` (messages are cut at 160 characters here, so the JSON is matched, not parsed).
_SCHEMA_TYPE = re.compile(r'Schema error: (#[^{\s]*)\{"type":\{"expected":\[([^\]]*)\],"actual":"(\w+)"')


def said(errors: tuple[str, ...]) -> str:
    """A verdict's errors in one line, the schema's type complaints as `#/key expected X, got Y`
    (the lines that only announce them left out)."""
    typed = [_SCHEMA_TYPE.search(e) for e in errors]
    found = [f"{m[1]} expected {m[2].replace(chr(34), '')}, got {m[3]}" for m in typed if m]
    if not found:
        return "; ".join(errors)
    announce = ("does not adhere to schema", "schema validation failed")
    rest = [e for e, m in zip(errors, typed) if not m and not any(a in e for a in announce)]
    return "; ".join(["schema validation failed: " + ", ".join(found), *rest])


class Unavailable(RuntimeError):
    """Qualcomm's parser cannot be asked here (not installed, or a version q9diff does not know)."""


def library_dir() -> Path:
    """The onnxruntime-qnn folder holding the library, found without importing the package."""
    import importlib.util

    spec = importlib.util.find_spec("onnxruntime_qnn")
    for where in (spec.submodule_search_locations or []) if spec else []:
        if (Path(where) / LIBRARY).is_file() and (Path(where) / HTP_LIBRARY).is_file():
            return Path(where)
    raise Unavailable(f"onnxruntime-qnn with {LIBRARY} is not installed")


def check(texts: list[str]) -> list[Verdict]:
    """Qualcomm's verdict on each text, parsed as a backend extension config; Unavailable if it cannot,
    or is not asked because a text is over MAX_TEXT_BYTES (checked before anything is handed to it)."""
    from q9diff.guard import ask_script  # the parent only: the child runs this file with the stdlib alone

    size = max((len(t.encode("utf-8")) for t in texts), default=0)
    if size > MAX_TEXT_BYTES:
        raise Unavailable(f"a text of {size} bytes, over the {MAX_TEXT_BYTES} q9diff hands {LIBRARY}")
    lib = library_dir()
    with tempfile.TemporaryDirectory(prefix="q9diff-extconfig-") as tmp:
        dirs = []
        for i, text in enumerate(texts):
            d = Path(tmp) / str(i)
            d.mkdir()
            (d / CONFIG_NAME).write_text(text, encoding="utf-8")
            dirs.append(str(d))
        answer, _ = ask_script(__file__, [str(lib), *dirs], tmp, TIMEOUT_S, LIBRARY, Unavailable)
    if "unavailable" in answer:
        raise Unavailable(answer["unavailable"])
    return [Verdict(tuple(errors)) for errors in answer["errors"]]


def _child(lib_dir: str, dirs: list[str]) -> dict:
    """In the child: parse `config.json` in each folder with a fresh parser object, after the probes."""
    import ctypes

    ext = ctypes.CDLL(os.path.join(lib_dir, LIBRARY))
    htp = ctypes.CDLL(os.path.join(lib_dir, HTP_LIBRARY))
    libc = ctypes.CDLL(None)
    ext.createBackendInterface.restype = ctypes.c_void_p
    ext.destroyBackendInterface.argtypes = [ctypes.c_void_p]
    log_t = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_int, ctypes.c_uint64, ctypes.c_void_p)
    errors: list[str] = []

    def on_log(fmt: bytes, level: int, _ts: int, args: int) -> None:
        if level == LOG_ERROR:
            buf = ctypes.create_string_buffer(4096)
            libc.vsnprintf(buf, len(buf), fmt, ctypes.c_void_p(args))
            errors.append(" ".join(buf.value.decode(errors="replace").split())[:160])

    callback = log_t(on_log)

    def parse(name: str) -> tuple[bool, bool, list[str]]:
        """(loaded, composed, errors) for the file `name` in the working directory."""
        errors.clear()
        obj = ext.createBackendInterface()
        table = ctypes.cast(ctypes.c_void_p.from_address(obj).value, ctypes.POINTER(ctypes.c_void_p))

        def call(slot: int, *argtypes):
            return ctypes.CFUNCTYPE(ctypes.c_bool, ctypes.c_void_p, *argtypes)(table[slot])

        call(SLOT_SETUP_LOGGING, log_t, ctypes.c_int)(obj, callback, LOG_ERROR)
        if not call(SLOT_INITIALIZE, ctypes.c_void_p)(obj, htp._handle):
            return False, False, ["the parser did not initialize"]
        path = name.encode()
        string = (ctypes.c_ubyte * 24)()  # libc++ std::string, short form: size << 1, then the bytes
        string[0] = len(path) << 1
        string[1 : 1 + len(path)] = list(path)
        loaded = call(SLOT_LOAD_CONFIG, ctypes.c_void_p)(obj, ctypes.addressof(string))
        composed = True
        if loaded:
            configs, count = ctypes.c_void_p(), ctypes.c_uint32()
            composed = call(SLOT_COMPOSE_GRAPHS, ctypes.c_void_p, ctypes.c_void_p)(
                obj, ctypes.addressof(configs), ctypes.addressof(count)
            )
        found = list(dict.fromkeys(errors))
        ext.destroyBackendInterface(obj)
        return bool(loaded), bool(composed), found

    # Probes: a missing file must be named in an error, and graph settings without graph_names refused.
    loaded, _, found = parse("q9diff-missing.json")
    if loaded or not any("q9diff-missing.json" in e for e in found):
        return {
            "unavailable": f"{LIBRARY} here does not load configs the way q9diff knows (another version?)"
        }
    with open("q9diff-probe.json", "w") as f:
        f.write('{"graphs": [{"vtcm_mb": 8}]}')
    loaded, composed, found = parse("q9diff-probe.json")
    if not loaded or composed or not found:
        return {"unavailable": f"{LIBRARY} here does not compose graphs the way q9diff knows"}
    out = []
    for d in dirs:
        os.chdir(d)
        out.append(parse(CONFIG_NAME)[2])
    return {"errors": out}


if __name__ == "__main__":
    result = _child(sys.argv[1], sys.argv[2:])
    sys.stdout.write("\n" + json.dumps(result) + "\n")
    sys.stdout.flush()
    os._exit(0)  # the library's static destructors are not ours to run
