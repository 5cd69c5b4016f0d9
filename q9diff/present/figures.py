"""A figure as plotly reads it, and plotly.js for a page: the dict form of a figure (what
`go.Figure(...).to_dict()` gives, the default "plotly" template in its layout), a figure's JSON as plotly
writes it, and plotly.js gzipped for a page (q9diff.present.embed), read from the installed plotly
package without importing it. The charts themselves are q9diff.present.charts; kept apart, the plumbing
neither knows a chart nor changes with one.
"""

from __future__ import annotations

import base64
import functools
import gzip
import json
import threading
from importlib.util import find_spec
from pathlib import Path


def plotly_data(name: str) -> bytes:
    """A file of the installed plotly package's data (plotly.js, the templates), read without importing
    plotly (0.04 s): plotly's own get_plotlyjs() and its template registry read these same files."""
    spec = find_spec("plotly")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("plotly is not installed")
    return (Path(spec.submodule_search_locations[0]) / "package_data" / name).read_bytes()


@functools.cache
def template() -> dict:
    """The "plotly" template, plotly's default, as graph_objects puts it into every figure's layout."""
    raw = json.loads(plotly_data("templates/plotly.json"))
    return {"data": raw["data"], "layout": raw["layout"]}


def figure(traces: list[dict], layout: dict) -> dict:
    """A figure as `go.Figure(...).to_dict()` gives it: the template first in its layout."""
    return {"data": traces, "layout": {"template": template(), **layout}}


_packing = threading.Lock()  # one packing at a time: the page waits for the thread's


def plotly_packed() -> str:
    """plotly.js gzipped and base64'd, once a process; waits for `start_packing`'s thread if it runs."""
    with _packing:
        return _packed()


@functools.cache
def _packed() -> str:
    js = plotly_data("plotly.min.js")  # what plotly.offline.get_plotlyjs() reads, as bytes
    return base64.b64encode(gzip.compress(js, 6, mtime=0)).decode("ascii")


def start_packing() -> None:
    """Pack plotly.js on another thread while the page is drawn: the 0.13 s of deflate (zlib lets go
    of the GIL) then overlaps the drawing instead of adding to it; the bytes are the same."""
    threading.Thread(target=plotly_packed, name="pack plotly.js", daemon=True).start()


def chart_json(f) -> str:
    """A figure's JSON as plotly.io.to_json writes it with its json engine: compact, NaN and infinities
    as null, and <, > and / as \\u escapes (the same characters to JSON), so no "</script>" can end the
    script that holds it. `f`: a figure dict (this module's) or a plotly Figure (verify's charts)."""
    if not isinstance(f, dict):
        import plotly.io as pio

        return pio.to_json(f, validate=False).replace("<", "\\u003c")
    text = json.dumps(f, separators=(",", ":"))
    if "NaN" in text or "Infinity" in text:
        text = json.dumps(json.loads(text, parse_constant=lambda _: None), separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("/", "\\u002f")
