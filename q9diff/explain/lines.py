"""One pasted log line taken apart before any message is looked up: its level, the tool and layer its
own words name, whether it is context (a timestamp, a banner, progress, a shell prompt, a stack frame),
the libraries it names and which of them it says could not be opened, and the error numbers written in it.

Every pattern here runs in time linear in the line: no quantifier over a group, no two unbounded runs
that can share characters; library names are found with `str.find` and a bounded walk back.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from q9diff.explain.catalogue import WORD, collapse, normal

LIBRARIES_PATH = Path(__file__).with_name("libraries.json")
MAX_LINE = 4096  # a line is read this far
MAX_NAMES = 8  # library names looked at in one line

_LEVELS = {"e": "E", "f": "E", "w": "W", "i": "I", "v": "V", "d": "D", "t": "V",
           "error": "E", "err": "E", "fatal": "E", "warning": "W", "warn": "W", "info": "I", "verbose": "V",
           "debug": "D", "trace": "V"}  # fmt: skip
# Where a line writes its level: QNN's <E>, a [ ERROR ] tag, a logcat column, ONNX Runtime's [E:onnxruntime:,
# ExecuTorch's "E 00:00:01.000000 executorch:", glog's E0000.
_LEVEL_FORMS = (
    re.compile(r"<([ewivd])>"),
    re.compile(r"\[ ?(error|err|fatal|warning|warn|info|verbose|debug|trace) ?\]"),
    re.compile(r"\[([ewivf]):onnxruntime:"),
    re.compile(r"^\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} {1,3}\d{1,7} {1,3}\d{1,7} ([vdiwef]) "),
    re.compile(
        r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} {1,3}\d{1,7}-\d{1,7} "
        r"[^ ]{1,80} {1,12}[^ ]{1,120} {1,12}([vdiwef]) "
    ),
    re.compile(r"^([vdiwef])/[^ (]{1,80} ?\("),
    re.compile(r"^([eiwdf]) \d\d:\d\d:\d\d\.\d{1,9} "),
    re.compile(r"^([eiwf])\d{4} \d\d:\d\d:\d\d"),
    re.compile(r"^(error|fatal|warning)\b"),
)
# The tools a line's own words name (for "never explain a line with another tool's meaning").
TOOLS = {
    "ExecuTorch": ("executorch", "qnn_executor_runner", "qnn_executorch_backend", "et_log"),
    "ONNX Runtime": (
        "onnxruntime",
        "qnnexecutionprovider",
        "qnn_execution_provider",
        "ort_fail",
        "ortexception",
    ),
    "Genie": ("genie", "libgenie", "geniedialog_create", "genie_status_error_general"),
    "LiteRT": ("litert", "tflite", "tensorflow", "litertdispatch_qualcomm", "liblitertdispatch_qualcomm"),
    "MNN": ("mnn", "mnn_qnn"),
    "qai-appbuilder": ("qai_appbuilder", "appbuilder"),
    "mllm": ("mllm",),
    "llama.cpp": ("ggml", "llama"),
}
_TOOL_OF = {w: tool for tool, words in TOOLS.items() for w in words}
TOOL_WORDS = frozenset(_TOOL_OF)
# The layer a line's own words name, where no message of the catalogue says it (the first listed wins).
_LAYER_WORDS = (
    ("FastRPC transport", r"adsprpc|fastrpc|remote_handle|apps_std|mod_table|rpcmem|dspqueue|cdsprpc"
                          r"|listener_android|apps_mem"),
    ("compiler and graph finalize", r"graph_prepare|tcm_migration|graph_auxdata|prepare_"),
    ("HTP backend", r"qnndsp|qnnhtp|htp"),
    ("library loading", r"dlopen|dlerror|loadlibrary"),
)  # fmt: skip
_LAYER = re.compile("|".join(f"\\b(?P<g{i}>{words})" for i, (_, words) in enumerate(_LAYER_WORDS)))
_CONTEXT_START = re.compile(
    r"^(?:(?P<banner>[\W_]{0,400}$)|(?P<logcat>-{3,} ?beginning of )|(?P<time>[\d:.\-/ tz\[\]]{4,60}$)"
    r"|(?P<prompt>[$#>] |>>> |\.\.\. |[\w.@-]{1,60}:[/~][^ ]{0,200} ?[#$] )"
    r"|(?P<command>(?:adb|export|cd|set|source|python3?|pip3?|cmake|make|ninja|echo|ls|cat|chmod|mkdir|sudo)"
    r"(?: |$)|\./[\w.-]{1,100}(?: |$))"
    r"|(?P<frame>at [\w$.<>]{1,200}\(|#\d{1,3} pc [0-9a-f]{4,16} |file \"[^\"]{1,300}\", line \d{1,7}"
    r"|traceback \(most)|(?P<fence>```))"
)
_CONTEXT_KINDS = {
    "banner": "a banner or separator", "logcat": "logcat's buffer banner", "time": "a timestamp",
    "prompt": "a shell prompt or command", "command": "a shell command", "frame": "a stack frame",
    "fence": "a code fence",
}  # fmt: skip
_PROGRESS = re.compile(r"\d{1,3}(\.\d{1,2})?% ?(\||\[|$)|\d{1,3}%\|")
_PUSHED = re.compile(r"\b\d{1,6} files? pushed\b|\bfiles? pushed\b|\d mb/s \(")
# A number written in a line as an error number: after err, error, status, code, returned ... (one
# separator at most, bounded blanks), or a FastRPC 0x8000xxxx anywhere.
_CODE = re.compile(
    r"\b(?:err(?:or)?(?: ?code)?|status|code|returned|ret|result|rc|err_code|error_code|transportstatus)"
    r" {0,3}(?:[:=(] {0,3})?(-?\d{1,11}|0x[0-9a-f]{1,8})\b"
)
# A QNN API call's result written as `QnnDevice_create = 14001`, `QnnGraph_finalize returned 1002`.
_API = re.compile(
    r"\b(?:qnn|genie)[a-z]{1,24}_[a-z]{1,40} ?(?:=|returned|returns|failed with|status)[ :]{0,2}"
    r"(-?\d{1,6}|0x[0-9a-f]{1,8})\b"
)
_NAME = re.compile(r"\b(?:qnn|genie|aee)_[a-z0-9_]{2,80}")
# An op the compiler or a framework's QNN layer reports it cannot build or add.
_OP = re.compile(
    r"\b(?:node|op|operator)\b[^.]{0,160}?\bnot supported\b|\bcould not create op\b|\bunsupported op\b"
)
_COMPILE = (
    "graph_prepare",
    "finalize",
    "graph prepare",
    "routerx86",
    "routerwindows",
    "routerfastrpc",
    "prepare lib",
)
_RPC = re.compile(r"\b0x(8000[0-9a-f]{4})\b|\b(-21474\d{5})\b")
_MISSING = (
    "cannot open shared object file", "not found", "no such file", "could not be found", "cannot find",
    "dynamic loading failed", "load library failed", "failed to load", "cannot open qnn library",
    "unable to load", "failed in loading", "could not load", "cannot load", "couldn't find", "fopen fail",
    "failed to open", "can not load", "can not open", "can't load", "can't open", "unable to open",
    "signature verify start failed", "signature verification failed",
)  # fmt: skip


def triggers() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Every pattern (as text) whose match can make reading a line give more than 'no level, no layer, no
    context, no library, no number, no signal': a line none of them matches reads as plain text. First the
    patterns anchored at the line's start, then the others; named groups are made plain so the patterns
    can be joined. Where a reading looks further only in lines holding a word (progress after '%', adb's
    report after 'pushed', numbers() after 'qnn' ...), the word stands for the pattern."""
    anchored = (*(f.pattern for f in _LEVEL_FORMS if f.pattern.startswith("^")), _CONTEXT_START.pattern)
    others = [
        *(f.pattern for f in _LEVEL_FORMS if not f.pattern.startswith("^")), _LAYER.pattern, _CODE.pattern,
        _RPC.pattern, _MISSING_WORDS.pattern, _OP.pattern,
    ]  # fmt: skip
    words = ("%", "pushed", "mb/s", "qnn", "genie", "aee_", "0x8000", "-21474", "not supported", *_COMPILE,
             "x86", "library_path", "apps_std_fopen")  # fmt: skip
    others += [re.escape(w) for w in words]
    plain = re.compile(r"\(\?P<\w+>")
    return tuple(plain.sub("(?:", p) for p in anchored), tuple(plain.sub("(?:", p) for p in others)


@dataclass(frozen=True)
class Library:
    """What a shared library named in a log is (libraries.json)."""

    name: str
    kind: str
    what: str
    ships: str
    side: str
    variable: str | None
    layer: str
    note: str = ""
    note_source: str = ""
    note_evidence: str = ""


_MISSING_WORDS = re.compile("|".join(re.escape(p) for p in _MISSING))


@dataclass(frozen=True)
class Missing:
    """A library a line says could not be opened (or found), and what we know of it."""

    name: str
    library: Library | None
    on_dsp: bool  # FastRPC was loading it onto the DSP (a Skel), not the application's loader
    reason: str  # what the line says after the name (the loader's reason), '' where it says none


@dataclass(slots=True, unsafe_hash=True)
class Line:
    number: int  # 1-based, in paste order
    cut: bool  # longer than MAX_LINE (only the first MAX_LINE characters are read)
    shown: str  # blanks collapsed, case kept
    body: str  # blanks collapsed, lower case
    level: str  # E W I V D, '' where the line writes none
    tools: frozenset[str]
    layer: str  # the layer the line's own words name, '' for none
    context: str  # what kind of context line it is, '' when it is not one


def level_of(body: str) -> str:
    """The level the line writes, in the first of its forms (`_LEVEL_FORMS`) that can match (a cheap test
    of its mark first: most lines have one form, or none)."""
    head = body[:200]
    c0, c1 = head[:1], head[1:2]
    guards = (
        "<" in head,
        "[" in head,
        "[" in head and ":onnxruntime:" in head,
        c0.isdigit(),
        c0.isdigit(),
        c1 == "/",
        c1 == " ",
        c1.isdigit(),
        c0 in ("e", "f", "w"),
    )
    for guard, form in zip(guards, _LEVEL_FORMS):
        if guard:
            m = form.search(head)
            if m:
                return _LEVELS[m.group(1)]
    return ""


NO_TOOLS: frozenset[str] = frozenset()
_NONE = NO_TOOLS


def tools_of(tokens: frozenset[str]) -> frozenset[str]:
    """The tools the words name (one shared empty set for the many lines that name none)."""
    found = tokens & _TOOL_OF.keys()
    return frozenset(_TOOL_OF[t] for t in found) if found else _NONE


def layer_of(body: str) -> str:
    """The layer the words of `body` name: the first of _LAYER_WORDS any word starts with."""
    found = {m.lastgroup for m in _LAYER.finditer(body[:MAX_LINE])}
    return next((layer for i, (layer, _) in enumerate(_LAYER_WORDS) if f"g{i}" in found), "")


def context_of(body: str, level: str) -> str:
    """What kind of context line `body` is ('' when it is not one): a separator, a timestamp, progress,
    a shell prompt or command, a stack frame; or a line whose level says it is information only."""
    m = _CONTEXT_START.match(body)
    if m:
        return _CONTEXT_KINDS[m.lastgroup]
    if "%" in body and _PROGRESS.search(body):
        return "progress"
    if ("pushed" in body or "mb/s" in body) and _PUSHED.search(body):
        return "adb's transfer report"
    if level in ("I", "V", "D"):
        return "an information line (its level is not an error's or a warning's)"
    return ""


def read(
    number: int, raw: str, shown: str | None = None, body: str | None = None
) -> tuple[Line, frozenset[str]]:
    """Line `number` taken apart, and the words it holds (what messages are looked up by); `shown` and
    `body` where the caller has them already."""
    shown = collapse(raw[:MAX_LINE]) if shown is None else shown
    body = normal(shown) if body is None else body
    tokens = frozenset(WORD.findall(body))
    level = level_of(body)
    line = Line(number, len(raw) > MAX_LINE, shown, body, level, tools_of(tokens), layer_of(body),
                context_of(body, level))  # fmt: skip
    return line, tokens


# ---------- libraries named in a line ----------

_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_+-.")


def library_names(body: str) -> list[tuple[int, int, str]]:
    """(start, end, name) of each shared library named in `body` (lower case): names ending .so,
    .so.N or .dll, found by their suffix and a walk back over the characters a name holds."""
    out: list[tuple[int, int, str]] = []
    for suffix in (".so", ".dll"):
        at = body.find(suffix)
        while at >= 0 and len(out) < MAX_NAMES:
            end = at + len(suffix)
            if suffix == ".so":  # .so.1, .so.1.2
                while end + 1 < len(body) and body[end] == "." and body[end + 1].isdigit() and end - at < 16:
                    end += 2
                    while end < len(body) and body[end].isdigit() and end - at < 16:
                        end += 1
            if end < len(body) and (body[end].isalnum() or body[end] == "_"):
                at = body.find(suffix, end)
                continue
            start = at
            while start > 0 and body[start - 1] in _NAME_CHARS and at - start < 120:
                start -= 1
            name = body[start:end].lstrip(".-")
            if len(name) > len(suffix) and name[0].isalpha():
                out.append((end - len(name), end, name))
            at = body.find(suffix, end)
    return sorted(out)


@cache
def _library_table() -> tuple[tuple[re.Pattern, dict], ...]:
    data = json.loads(LIBRARIES_PATH.read_text(encoding="utf-8"))
    return tuple((re.compile(r["match"]), r) for r in data["libraries"])


@cache
def variables() -> dict[str, str]:
    data = json.loads(LIBRARIES_PATH.read_text(encoding="utf-8"))
    return data["variables"]


def library(name: str) -> Library | None:
    """What the library `name` (a file name, any case) is, from libraries.json; None when not listed."""
    base = name.lower().rsplit("/", 1)[-1].rsplit("\\", 1)[-1]
    for pattern, row in _library_table():
        m = pattern.fullmatch(base)
        if m:
            arch = next((g for g in m.groups() if g), "")
            what, ships = row["what"].replace("{arch}", arch), row["ships"].replace("{arch}", arch)
            note = (row.get("note", ""), row.get("note_source", ""), row.get("note_evidence", ""))
            return Library(
                name, row["kind"], what, ships, row["side"], row.get("variable"), row["layer"], *note
            )
    return None


def missing(line: Line) -> list[Missing]:
    """The libraries `line` says could not be opened: the name a loader's failure phrase follows or
    precedes (dlopen's 'library "X" not found', glibc's 'X: cannot open shared object file', FastRPC's
    'dynamic loading failed for file:///X?...', 'Cannot Open QNN library X, with error: Y ...')."""
    body = line.body
    if not _MISSING_WORDS.search(body) or "' not found (required by " in body:
        return []  # glibc's "version `GLIBCXX_3.4.30' not found (required by X)": found, of another version
    names = library_names(body)
    if not names:
        return []
    out = []
    cannot_open = body.find("cannot open shared object file")
    for start, end, name in names:
        if name.startswith("testsig"):
            continue  # FastRPC's probe for a test signature: none on a production device, which is normal
        after = body[end : end + 80]
        before = body[max(0, start - 60) : start]
        if cannot_open >= 0 and not after.startswith(": cannot open shared object file"):
            continue  # glibc names the missing file right before its phrase; the others are its dependants
        if cannot_open < 0 and not any(p in after or p in before for p in _MISSING):
            continue
        on_dsp = "file:///" in before[-12:] or "skel" in name or "dynamic loading failed" in before
        reason = _reason(line.shown, end) or _said_before(before)
        lib = library(name)
        name_shown = line.shown[start:end] if len(line.shown) >= end else name
        out.append(Missing(name_shown, lib, on_dsp, reason))
    return out


def _said_before(before: str) -> str:
    """The loader's failure phrase written before a library's name ('signature verify start failed for
    X'), when nothing follows the name: what the line says, not a reason of ours."""
    found = [(before.rfind(p), p) for p in _MISSING if p in before]
    return max(found)[1] if found else ""


def _reason(shown: str, end: int) -> str:
    """The loader's words after a library's name (up to the end of its sentence), as written."""
    rest = shown[end : end + 160]
    i = rest.find("(dlerror")
    if i >= 0:
        return rest[i + 1 : rest.find(")", i) if rest.find(")", i) > 0 else None].strip()
    return rest.strip(" :\"'").split(". ")[0]


def numbers(line: Line) -> list[int]:
    """The error numbers written in the line as such (after err, error, status, code, ...) and any
    FastRPC 0x8000xxxx, in the order written."""
    out = []
    for m in _CODE.finditer(line.body):
        s = m.group(1)
        out.append(int(s, 16) if s.startswith("0x") else int(s))
    for m in _API.finditer(line.body) if "qnn" in line.body or "genie" in line.body else ():
        s = m.group(1)
        v = int(s, 16) if s.startswith("0x") else int(s)
        if v not in out:
            out.append(v)
    for m in _RPC.finditer(line.body) if "0x8000" in line.body or "-21474" in line.body else ():
        v = int(m.group(1), 16) if m.group(1) else int(m.group(2))
        if v not in out:
            out.append(v)
    return out


def names(line: Line) -> list[str]:
    """The C names of error values written in the line (QNN_..., GENIE_..., AEE_...), in upper case."""
    body = line.body
    if "qnn_" not in body and "genie_" not in body and "aee_" not in body:
        return []
    return [n.upper() for n in _NAME.findall(body)]


_TCM = ("fit in tcm", "tcm migration", "bytes of tcm")


def signals(line: Line) -> set[str]:
    """What the line's own words show, whatever message it is: an op that cannot be built ('op'), the
    compiler at work ('compile'), an op or a graph the compiler cannot fit in VTCM ('vtcm'), the x86
    emulator ('emulator')."""
    out = set()
    body = line.body
    if ("not supported" in body or "could not create op" in body or "unsupported op" in body) and _OP.search(
        body
    ):
        out |= {"op", "compile"}
    if any(w in body for w in _COMPILE) or line.layer == "compiler and graph finalize":
        out.add("compile")
    if "compile" in out and any(w in body for w in _TCM):  # the compiler's words for VTCM
        out.add("vtcm")
    if "x86" in body and ("routerx86" in body or "x86_64" in body):
        out.add("emulator")
    return out


def adsp_path_with_colons(line: Line) -> str | None:
    """An ADSP_LIBRARY_PATH (or DSP_LIBRARY_PATH) value the line shows separated by ':' and not ';', or
    a path FastRPC tried that holds such a list; None when the line shows neither."""
    body = line.body
    if "library_path" not in body and "apps_std_fopen" not in body:
        return None
    for key in ("adsp_library_path", "dsp_library_path"):
        at = body.find(key)
        if at >= 0:
            value = body[at + len(key) : at + len(key) + 300].lstrip(" =:\"'").split(" ")[0].strip("\"'")
            if ":" in value.replace("://", "") and ";" not in value and value.count("/") > 1:
                return value
    at = body.find("apps_std_fopen")
    if at >= 0 and "skel" in body:
        path = body[at:].split(" for ", 1)[-1].split(" ")[0]
        if path.count(":") >= 1 and ";" not in path and path.startswith("/"):
            return path
    return None
