"""The child side of the genie runner (`python -m q9diff.runners.genie_child JOB.json`): the only code that
loads libGenie, written against the Genie C API (GenieCommon.h, GenieDialog.h, GenieLog.h facts), so a crash
in Qualcomm's library ends this process, never q9diff."""

from __future__ import annotations

import argparse
import ctypes
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from q9diff.runners.genie import (
    EXIT_GENIE_ERROR,
    EXIT_UNAVAILABLE,
    GENIE_LIBRARY,
    PRELOAD,
    GenieError,
    GenieUnavailable,
    wheel_dir,
)

# --- the Genie C API, written from GenieCommon.h, GenieDialog.h and GenieLog.h ----------------------

GENIE_STATUS_NAMES = {
    0: "SUCCESS",
    1: "WARNING_ABORTED",
    2: "WARNING_BOUND_HANDLE",
    3: "WARNING_PAUSED",
    4: "WARNING_CONTEXT_EXCEEDED",
    -1: "ERROR_GENERAL",
    -2: "ERROR_INVALID_ARGUMENT",
    -3: "ERROR_MEM_ALLOC",
    -4: "ERROR_INVALID_CONFIG",
    -5: "ERROR_INVALID_HANDLE",
    -6: "ERROR_QUERY_FAILED",
    -7: "ERROR_JSON_FORMAT",
    -8: "ERROR_JSON_SCHEMA",
    -9: "ERROR_JSON_VALUE",
    -10: "ERROR_GENERATE_FAILED",
    -11: "ERROR_GET_HANDLE_FAILED",
    -12: "ERROR_APPLY_CONFIG_FAILED",
    -13: "ERROR_SET_PARAMS_FAILED",
    -14: "ERROR_BOUND_HANDLE",
}
GENIE_STATUS_SUCCESS = 0
# A query that ends because the context is full has still produced valid tokens.
_QUERY_FINISHED = {0, 4}
GENIE_DIALOG_SENTENCE_COMPLETE = 0  # GenieDialog_SentenceCode_t: the input is the whole query
GENIE_LOG_LEVEL_INFO = 3  # GenieLog_Level_t; INFO carries the "Inserting graph" lines we check

_Handle = ctypes.c_void_p
_Status = ctypes.c_int32
# GenieDialog_TokenQueryCallback_t(const uint32_t* response, const uint32_t numTokens,
#                                  const GenieDialog_SentenceCode_t sentenceCode, const void* userData)
_TokenQueryCallback = ctypes.CFUNCTYPE(
    None, ctypes.POINTER(ctypes.c_uint32), ctypes.c_uint32, ctypes.c_int, ctypes.c_void_p
)
_SIGNATURES: dict[str, list[Any]] = {
    # GenieLog_create(GenieLogConfig_Handle_t (must be NULL), GenieLog_Callback_t (NULL: Genie prints),
    #                 GenieLog_Level_t, GenieLog_Handle_t*)
    "GenieLog_create": [_Handle, _Handle, ctypes.c_int, ctypes.POINTER(_Handle)],
    "GenieLog_free": [_Handle],
    "GenieDialogConfig_createFromJson": [ctypes.c_char_p, ctypes.POINTER(_Handle)],
    "GenieDialogConfig_bindLogger": [_Handle, _Handle],
    "GenieDialogConfig_free": [_Handle],
    "GenieDialog_create": [_Handle, ctypes.POINTER(_Handle)],
    "GenieDialog_setMaxNumTokens": [_Handle, ctypes.c_uint32],
    "GenieDialog_tokenQuery": [
        _Handle,
        ctypes.POINTER(ctypes.c_uint32),
        ctypes.c_uint32,
        ctypes.c_int,
        _TokenQueryCallback,
        ctypes.c_void_p,
    ],
    "GenieDialog_free": [_Handle],
}


# --- the child side: the only code that loads Qualcomm's libraries ----------------------------------


def _load_genie() -> ctypes.CDLL:
    found = wheel_dir()
    if found is None:
        raise GenieUnavailable(f"{GENIE_LIBRARY} not found in onnxruntime_qnn.")
    for lib in PRELOAD:
        ctypes.CDLL(str(found / lib), mode=ctypes.RTLD_GLOBAL)
    genie = ctypes.CDLL(str(found / GENIE_LIBRARY))
    for function, argtypes in _SIGNATURES.items():
        getattr(genie, function).argtypes = argtypes
        getattr(genie, function).restype = _Status
    return genie


def _dirty_the_heap() -> None:
    """Fill heap blocks of KV-buffer sizes with 0x5a and free them, keeping them on the heap."""
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    m_trim_threshold, m_mmap_threshold = -1, -3  # malloc.h
    libc.mallopt(m_mmap_threshold, 64 << 20)
    libc.mallopt(m_trim_threshold, 256 << 20)
    blocks = []
    for size in [4096 * i for i in range(1, 65)] * 4:
        block = libc.malloc(size)
        ctypes.memset(block, 0x5A, size)
        blocks.append(block)
    libc.malloc(64)  # a live block above them, so the freed ones are not trimmed away
    for block in blocks:
        libc.free(block)


def _check(status: int, what: str) -> None:
    if status != GENIE_STATUS_SUCCESS:
        raise GenieError(f"{what} returned {GENIE_STATUS_NAMES.get(status, status)}")


def run_job(job: dict, stage: Callable[[str], None]) -> dict:
    """Create the dialog, token-query it, collect token ids and times; `stage` is told each step first."""
    stage("loading libGenie")
    genie = _load_genie()
    log, config, dialog = _Handle(), _Handle(), _Handle()
    try:
        stage("parsing the config")
        _check(genie.GenieLog_create(None, None, GENIE_LOG_LEVEL_INFO, ctypes.byref(log)), "GenieLog_create")
        text = Path(job["config"]).read_bytes()
        status = genie.GenieDialogConfig_createFromJson(text, ctypes.byref(config))
        _check(status, "GenieDialogConfig_createFromJson")
        _check(genie.GenieDialogConfig_bindLogger(config, log), "GenieDialogConfig_bindLogger")
        if job.get("dirty_heap"):
            _dirty_the_heap()
        stage("creating the dialog (loading the ctx-bins)")
        start = time.perf_counter()
        _check(genie.GenieDialog_create(config, ctypes.byref(dialog)), "GenieDialog_create")
        create_seconds = time.perf_counter() - start
        _check(genie.GenieDialog_setMaxNumTokens(dialog, job["steps"]), "GenieDialog_setMaxNumTokens")
        tokens: list[int] = []
        stamps: list[float] = []

        def collect(response, count, _code, _user):
            now = time.perf_counter()
            for i in range(count):
                tokens.append(int(response[i]))
                stamps.append(now)

        callback = _TokenQueryCallback(collect)
        prompt = (ctypes.c_uint32 * len(job["prompt_ids"]))(*job["prompt_ids"])
        stage("running the token query")
        start = time.perf_counter()
        status = genie.GenieDialog_tokenQuery(
            dialog, prompt, len(job["prompt_ids"]), GENIE_DIALOG_SENTENCE_COMPLETE, callback, None
        )
        if status not in _QUERY_FINISHED:
            _check(status, "GenieDialog_tokenQuery")
        steps = [b - a for a, b in zip([start, *stamps], stamps)]
        stage("freeing the dialog")
        return {
            "tokens": tokens[: job["steps"]],
            "step_seconds": steps[: job["steps"]],
            "create_seconds": create_seconds,
            "query_status": GENIE_STATUS_NAMES.get(status, str(status)),
        }
    finally:
        if dialog:
            genie.GenieDialog_free(dialog)
        if config:
            genie.GenieDialogConfig_free(config)
        if log:
            genie.GenieLog_free(log)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m q9diff.runners.genie_child",
        description="Run one Genie token query described by JOB.json; write the result where it says.",
    )
    parser.add_argument("job", type=Path)
    args = parser.parse_args(argv)
    job = json.loads(args.job.read_text())
    result_path = Path(job["result"])
    progress = {"stage": "starting"}

    def stage(name: str) -> None:
        """Persist where we are before each step, so a crash can still be told apart."""
        progress["stage"] = name
        result_path.write_text(json.dumps(progress))

    code = 0
    try:
        result = run_job(job, stage)
    except GenieUnavailable as exc:
        result, code = {"error": str(exc)}, EXIT_UNAVAILABLE
    except (GenieError, OSError) as exc:
        result, code = {"error": f"{exc} while {progress['stage']}"}, EXIT_GENIE_ERROR
    result_path.write_text(json.dumps({**progress, **result}))
    return code


if __name__ == "__main__":
    sys.exit(main())
