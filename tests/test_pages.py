"""Every HTML page q9diff writes, measured as Chromium draws it (issue 45): at a phone's 412 px no chart
title, legend, axis title or label runs off its chart or into another label, no table header is split
inside a word, no plot area is squeezed to a sliver; at 1400 px no legend covers an x axis; identical files
get no empty table or chart. And the notebook view: two results shown in a page as Jupyter shows them
leave the page's own styles alone, draw their charts, and carry plotly.js once."""

from __future__ import annotations

import html
import importlib.util
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT, q9diff_cli

pytestmark = pytest.mark.skipif(
    shutil.which("chromium") is None,
    reason="Debian chromium not installed: apt-get install chromium (.ci/run installs it)",
)

QWEN, VARIANTS = FIXTURES / "qwen-mini", FIXTURES / "variants"
FLAGS = (
    "--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking"
    " --disable-component-update --disable-sync"
).split()

# What is wrong with a page as drawn, each problem a line. Run in the page once its charts are drawn.
MEASURE = r"""(() => {
  const problems = [];
  const box = (el) => el.getBoundingClientRect();
  const inside = (r, o) => r.left >= o.left - 1 && r.right <= o.right + 1 && r.top >= o.top - 1
    && r.bottom <= o.bottom + 1;
  const meets = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1
    && b.top < a.bottom - 1;
  const name = (el) => (el.textContent || "").trim().slice(0, 70);
  for (const th of document.querySelectorAll("th")) {
    const walk = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      for (const m of n.data.matchAll(/\S+/g)) {
        const r = document.createRange();
        r.setStart(n, m.index);
        r.setEnd(n, m.index + m[0].length);
        const rects = [...r.getClientRects()].filter((x) => x.width > 0);
        const lines = new Set(rects.map((x) => Math.round(x.top)));
        if (lines.size > 1) problems.push(`a header split inside a word: ${m[0]}`);
      }
    }
  }
  for (const chart of document.querySelectorAll(".plotly-graph-div")) {
    const canvas = box(chart), title = chart.querySelector(".gtitle");
    const tag = title ? name(title) : chart.id;
    const texts = chart.querySelectorAll(
      ".gtitle, .g-xtitle text, .g-ytitle text, .legend, .annotation-text-g");
    for (const t of texts) {
      if (box(t).width > 0 && !inside(box(t), canvas)) problems.push(`off "${tag}": ${name(t)}`);
    }
    const legend = chart.querySelector(".legend");
    if (legend && title && meets(box(legend), box(title))) problems.push(`a legend over "${tag}"`);
    for (const x of chart.querySelectorAll(".g-xtitle text, .xtick text")) {
      if (legend && meets(box(legend), box(x))) problems.push(`a legend over an x axis: "${tag}" ${name(x)}`);
    }
    const notes = [...chart.querySelectorAll(".annotation-text-g")];
    notes.forEach((a, i) => notes.slice(i + 1).forEach((b) => {
      if (meets(box(a), box(b))) problems.push(`labels into each other: "${tag}" ${name(a)} / ${name(b)}`);
    }));
    for (const bg of chart.querySelectorAll(".bglayer .bg")) {
      if (box(bg).height < 100) problems.push(`a plot ${Math.round(box(bg).height)} px tall in "${tag}"`);
    }
  }
  return {charts: document.querySelectorAll("script[data-chart]").length,
          drawn: document.querySelectorAll(".plotly-graph-div .main-svg").length,
          width: document.documentElement.scrollWidth, problems};
})()"""

# Waits for every chart of the page to be drawn, then measures and posts what it found to the frame.
PROBE = (
    "<script>addEventListener('load', () => { let n = 0; const t = setInterval(() => { n++;"
    " const want = document.querySelectorAll('script[data-chart]').length;"
    " const have = document.querySelectorAll('.plotly-graph-div .main-svg').length;"
    " if (have >= 3 * want || n > 75) { clearInterval(t); setTimeout(() =>"
    " parent.postMessage(JSON.stringify(MEASURE), '*'), 300); } }, 200); });</script>"
)


def chromium(tmp: Path, page: Path, window: int) -> str:
    """The frame page's DOM once Chromium ran it (headless, a fresh profile, no network)."""
    profile = tmp / f"profile-{page.stem}-{window}"
    cmd = ["chromium", *FLAGS, f"--user-data-dir={profile}", f"--window-size={window},2000"]
    cmd += ["--virtual-time-budget=30000", "--dump-dom", page.as_uri()]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=240).stdout


def measure(tmp: Path, page: Path, width: int) -> dict:
    """`page` drawn `width` px wide (in a frame that wide: a headless window is 500 px at least)."""
    probe = tmp / f"{page.stem}-{width}.html"
    text = page.read_text()
    probe.write_text(text.replace("</body>", PROBE.replace("MEASURE", MEASURE) + "</body>"))
    frame = tmp / f"frame-{page.stem}-{width}.html"
    frame.write_text(
        f"<!doctype html><body style='margin:0'><iframe src='{probe.name}' style='width:{width}px;"
        "height:2000px;border:0'></iframe><pre id='out'></pre><script>addEventListener('message',"
        " (e) => { document.getElementById('out').textContent = e.data; });</script>"
    )
    dom = chromium(tmp, frame, max(width, 500) + 20)
    found = re.search(r'<pre id="out">(.*?)</pre>', dom, re.S)
    assert found and found.group(1), f"{page.name}: nothing measured"
    return json.loads(html.unescape(found.group(1)))


def _write(tmp: Path, name: str, *args: str, codes=(0, 1)) -> Path:
    page = tmp / f"{name}.html"
    done = q9diff_cli(*args, "--html", str(page), cwd=ROOT)
    assert done.returncode in codes, done.stderr
    return page


def _pages(tmp: Path) -> dict[str, Path]:
    """One page of every kind q9diff writes, the identical files' too."""
    import q9diff

    pages = {
        "pair": _write(tmp, "pair", str(VARIANTS / "soc_0.bin"), str(VARIANTS / "soc_77.bin")),
        "set": _write(tmp, "set", str(QWEN / "local"), str(QWEN / "reference")),
        "identical": _write(tmp, "identical", str(VARIANTS / "soc_0.bin"), str(VARIANTS / "soc_0.bin")),
        "identical-set": _write(tmp, "identical-set", str(QWEN / "local"), str(QWEN / "local")),
        "doctor": _write(tmp, "doctor", "doctor", str(QWEN / "local"), str(QWEN / "reference")),
        "doctor-runtime": _write(
            tmp, "doctor-runtime", "doctor", str(QWEN / "reference"), "--runtime", "2.48"
        ),
        "target": _write(tmp, "target", str(QWEN / "local"), "--target", "QCS9100", "--runtime", "2.48"),
        "inspect": _write(tmp, "inspect", "inspect", str(QWEN / "local" / "part_1_of_2.bin")),
    }
    pages["load"] = tmp / "load.html"
    pages["load"].write_text(q9diff.will_load(QWEN / "local", runtime="2.48", target="QCS9100").to_html())
    from q9diff.runners.local import LocalRunner

    if not LocalRunner().missing():  # verify: one graph's outputs, and the 2-part LLM's drift per step
        pages["verify"] = _write(
            tmp, "verify", "verify", str(VARIANTS / "vtcm_4mb.bin"), str(VARIANTS / "vtcm_8mb.bin")
        )
        pages["verify-llm"] = _write(
            tmp, "verify-llm", "verify", str(QWEN / "local"), str(QWEN / "reference"), "--steps", "2"
        )
    if importlib.util.find_spec("onnxruntime_qnn") is not None:  # steps rebuilds: two small builds
        pages["steps"] = _write(
            tmp, "steps", "steps", str(VARIANTS / "vtcm_4mb.bin"), str(VARIANTS / "vtcm_8mb.bin")
        )
    return pages


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, Path]:
    return _pages(tmp_path_factory.mktemp("pages"))


def test_every_page_at_412_px_clips_and_splits_nothing(pages, tmp_path):
    """issue 45: at 412 px chart titles ran off the canvas, the two region maps' titles ran into each
    other, the waterfall's plot was ~40 px tall, headers split inside words ("candi/date")."""
    assert {"pair", "set", "doctor", "target", "inspect", "load"} <= set(pages)
    found = {}
    for name, page in pages.items():
        m = measure(tmp_path, page, 412)
        assert m["drawn"] >= 3 * m["charts"], f"{name}: {m['drawn']} of {m['charts']} charts drawn"
        assert m["width"] <= 412, f"{name} is {m['width']} px wide"
        found[name] = list(dict.fromkeys(m["problems"]))
    assert found == {name: [] for name in pages}


def test_no_legend_covers_an_axis_at_1400_px(pages, tmp_path):
    """issue 45: the legend covered the x axis' title even at 1400 px."""
    found = {}
    for name in ("pair", "set", "verify", "verify-llm"):
        if name in pages:
            m = measure(tmp_path, pages[name], 1400)
            assert m["drawn"] >= 3 * m["charts"], f"{name}: {m['drawn']} of {m['charts']} charts drawn"
            found[name] = list(dict.fromkeys(m["problems"]))
    assert found == {name: [] for name in found}


def test_identical_files_get_no_empty_table_or_chart(pages):
    for name in ("identical", "identical-set"):
        page = pages[name].read_text()
        body = page.split("<body>", 1)[1]
        assert "Identical: no difference in any byte" in body
        assert "<th>cause</th>" not in body  # no causes table with no row
        titles = re.findall(r'"title":\{"text":"([^"]*)"', body)
        assert titles and all(t.startswith("Region maps") for t in titles), titles


# --- the notebook view ---------------------------------------------------------------------------------

# A page standing in for a notebook: its own style, then each result's _repr_html_() put in an output
# cell as Jupyter does (innerHTML; each script then run by a new <script> element, as Jupyter runs them).
NOTEBOOK = """<!doctype html><html><head><meta charset="utf-8"><style>
body{font-family:Georgia,serif;margin:7px 31px;max-width:900px;color:#123456}
h2,table,th,td,p{font-family:Georgia,serif}</style></head><body><h2 id="own">The notebook's own heading</h2>
<div class="cell" id="cell-0"></div><div class="cell" id="cell-1"></div><pre id="out"></pre>
<script>
const before = () => {
  const b = getComputedStyle(document.body), h = getComputedStyle(document.getElementById("own"));
  return [b.fontFamily, b.margin, b.maxWidth, b.color, h.fontFamily, h.fontSize];
};
const host = before();
const outputs = OUTPUTS;
outputs.forEach((html, i) => {
  const cell = document.getElementById("cell-" + i);
  cell.innerHTML = html;
  for (const old of cell.querySelectorAll("script")) {
    const s = document.createElement("script");
    s.type = old.type || "text/javascript";
    s.textContent = old.textContent;
    for (const a of old.attributes) s.setAttribute(a.name, a.value);
    old.replaceWith(s);
  }
});
let n = 0;
const t = setInterval(() => {
  n++;
  const drawn = [0, 1].map((i) => document.querySelectorAll(`#cell-${i} .plotly-graph-div .main-svg`).length);
  if ((drawn[0] && drawn[1]) || n > 100) {
    clearInterval(t);
    document.getElementById("out").textContent = JSON.stringify({host, after: before(), drawn,
      charts: [0, 1].map((i) => document.querySelectorAll(`#cell-${i} script[data-chart]`).length)});
  }
}, 200);
</script></body></html>"""


def test_two_results_in_a_notebook_leave_its_styles_alone_and_draw_with_one_plotly(tmp_path):
    """issue 45: _repr_html_ was a whole page (`<!doctype html>`, `body{font-family...;max-width:1400px}`)
    that restyled the notebook, with ~2 MB of plotly.js per result shown."""
    import q9diff
    from q9diff.present import notebook

    notebook._sent = False  # a fresh kernel: the first result shown carries plotly.js
    shown = [
        q9diff.diff(VARIANTS / "soc_0.bin", VARIANTS / "soc_77.bin")._repr_html_(),
        q9diff.diff(QWEN / "local", QWEN / "reference")._repr_html_(),
    ]
    assert len(shown[1]) < len(shown[0]) / 5  # the second carries no plotly.js
    page = tmp_path / "notebook.html"
    page.write_text(NOTEBOOK.replace("OUTPUTS", json.dumps(shown).replace("</", "<\\/")))
    dom = chromium(tmp_path, page, 1200)
    found = re.search(r'<pre id="out">(.*?)</pre>', dom, re.S)
    assert found and found.group(1), "nothing measured"
    m = json.loads(html.unescape(found.group(1)))
    assert m["after"] == m["host"] and m["host"][0].startswith("Georgia")
    assert m["charts"][0] and m["charts"][1]
    assert m["drawn"] == [3 * m["charts"][0], 3 * m["charts"][1]]  # every chart of both, one plotly.js
