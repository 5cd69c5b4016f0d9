"""The HTP compiler's options string (the `Op` pickle record): `key=value;` pairs, front-coded keys.

A key that starts with a digit is written `D L rest`: take the first int(L, 36) + 3 characters of
the (D+1)-th most recent decoded key and append `rest`. Evidence: every decoded key of every
fixture is distinct and appears among the strings of libHtpPrepare.so (FORMAT_FACTS.md section 4).
"""

from __future__ import annotations


def decode_options(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    recent: list[str] = []
    for entry in text.split(";"):
        entry = entry.strip("\x00")
        if not entry:
            continue
        key, _, value = entry.partition("=")
        if len(key) >= 2 and key[0].isdigit():
            back = int(key[0]) + 1
            try:
                keep = int(key[1], 36) + 3
            except ValueError:
                keep = None
            if keep is not None and back <= len(recent):
                key = recent[-back][:keep] + key[2:]
        recent.append(key)
        out[key] = value
    return out
