"""Reports read as the user reads them: `q9diff report` from a saved --json with the binaries gone, the
HTML as Chromium draws it, the Markdown as a Markdown library renders it, hostile saved results."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import FIXTURES
from test_cli import q9diff

QWEN = FIXTURES / "qwen-mini"
PART = "part_1_of_2.bin"
chromium = pytest.mark.skipif(
    shutil.which("chromium") is None,
    reason="Debian chromium not installed: apt-get install chromium (.ci/run installs it)",
)


def _pair(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "in").mkdir()
    a, b = tmp_path / "in" / "cand.bin", tmp_path / "in" / "ref.bin"
    shutil.copy(QWEN / "local" / PART, a)
    shutil.copy(QWEN / "reference" / PART, b)
    return a, b


@pytest.fixture(scope="module")
def single(tmp_path_factory) -> dict:
    """One diff of two files, written directly and saved, then the binaries removed."""
    tmp = tmp_path_factory.mktemp("single")
    a, b = _pair(tmp)
    direct = tmp / "direct.html"
    saved = q9diff(str(a), str(b), "--json")
    assert saved.returncode == 1, saved.stderr
    (tmp / "r.json").write_text(saved.stdout)
    terminal = q9diff(str(a), str(b))
    assert q9diff(str(a), str(b), "--html", str(direct)).returncode == 1
    md = q9diff(str(a), str(b), "--markdown", "-")
    shutil.rmtree(tmp / "in")  # the binaries are gone
    return {"tmp": tmp, "json": tmp / "r.json", "direct": direct, "terminal": terminal, "md": md}


def test_report_from_saved_json_is_the_same_page_with_the_binaries_gone(single):
    tmp = single["tmp"]
    out = tmp / "from-json.html"
    r = q9diff("report", str(single["json"]), "--html", str(out))
    assert r.returncode == 1, r.stderr  # the saved command's status: different
    assert out.read_bytes() == single["direct"].read_bytes()
    assert r.stdout.startswith(single["terminal"].stdout)  # the same terminal view, then the note
    assert r.stdout.endswith(f"wrote the HTML report: {out}\n")
    md = q9diff("report", str(single["json"]), "--markdown", "-")
    assert md.returncode == 1 and md.stdout == single["md"].stdout


def test_a_set_report_from_saved_json_is_the_same_page(tmp_path):
    for side in ("local", "reference"):
        shutil.copytree(QWEN / side, tmp_path / side)
    a, b = tmp_path / "local", tmp_path / "reference"
    saved = q9diff(str(a), str(b), "--json", "--html", str(tmp_path / "direct.html"))
    assert saved.returncode == 1, saved.stderr
    (tmp_path / "s.json").write_text(saved.stdout)
    terminal = q9diff(str(a), str(b)).stdout
    shutil.rmtree(a), shutil.rmtree(b)
    r = q9diff("report", str(tmp_path / "s.json"), "--html", str(tmp_path / "r.html"))
    assert r.returncode == 1, r.stderr
    assert (tmp_path / "r.html").read_bytes() == (tmp_path / "direct.html").read_bytes()
    assert r.stdout.startswith(terminal)
    page = (tmp_path / "r.html").read_text()
    figs = _figures(page)
    titles = [f["layout"]["title"]["text"] for f in figs]
    assert titles[0] == "Across the set: changed bytes per part, by effect"
    for kind in ("Size change by region", "Region maps", "Where bytes changed", "Settings:", "Ops per kind"):
        assert sum(t.startswith(kind) for t in titles) == 2, (kind, titles)  # each part has every chart
    assert "<title>q9diff set diff local vs reference</title>" in page


# --- what the charts draw -------------------------------------------------------------------------------


def _figures(page: str) -> list[dict]:
    return [
        json.loads(m)
        for m in re.findall(r'<script type="application/json" data-chart="[^"]+">(.*?)</script>', page)
    ]


def _figure(page: str, title: str) -> dict:
    return next(f for f in _figures(page) if f["layout"]["title"]["text"].startswith(title))


def test_treemap_values_add_up_to_the_file_size(single):
    page, data = single["direct"].read_text(), json.loads(single["json"].read_text())
    traces = _figure(page, "Region maps")["data"]
    for trace, side in zip(traces, ("a", "b")):
        assert trace["branchvalues"] == "total"
        values = dict(zip(trace["ids"], trace["values"]))
        roots = [v for i, v, p in zip(trace["ids"], trace["values"], trace["parents"]) if p == ""]
        assert sum(roots) == data[side]["size"]
        children: dict[str, int] = {}
        for v, p in zip(trace["values"], trace["parents"]):
            if p:
                children[p] = children.get(p, 0) + v
        assert all(total <= values[p] for p, total in children.items())  # no parent counted twice


def _chromium(tmp_path: Path, page: Path, width: int, extra: list[str]) -> subprocess.CompletedProcess:
    flags = "--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-sync"
    flags += " --disable-background-networking --disable-component-update --enable-logging=stderr --v=0"
    cmd = ["chromium", *flags.split(), f"--user-data-dir={tmp_path / f'prof{width}'}"]
    cmd += [f"--window-size={width},2000", "--virtual-time-budget=15000", *extra, page.as_uri()]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180)


_SLICE = re.compile(r'<path class="surface" d="M([\d.]+),([\d.]+)L([\d.]+),[\d.]+L[\d.]+,([\d.]+)L[^"]*Z"'
                    r'.*?data-unformatted="([^"]*)"')  # fmt: skip


@chromium
def test_treemap_areas_drawn_in_chromium_match_the_sizes(single, tmp_path):
    """The weights pool, 72% of the file, is drawn as 72% of the map (it was 37% beside an empty area)."""
    run = _chromium(tmp_path, single["direct"], 1400, ["--dump-dom"])
    dom = run.stdout
    assert dom.count('class="main-svg"') >= 10, run.stderr[-2000:]  # every chart drawn: plotly unpacked
    data = json.loads(single["json"].read_text())
    layers = re.findall(r'<g class="trace treemap".*?(?=<g class="trace treemap"|</svg>)', dom, re.S)
    assert len(layers) == 2
    for layer, side in zip(layers, ("a", "b")):
        area = {
            label: (float(x1) - float(x0)) * (float(y1) - float(y0))
            for x0, y0, x1, y1, label in _SLICE.findall(layer)
        }
        tops = [
            label
            for label in area
            if label in ("WEIGHTS/0", "ROOT", "metadata") or label.startswith("graph ")
        ]
        drawn = area["WEIGHTS/0"] / sum(area[t] for t in tops)
        pool = sum(r["size"] for r in data[side]["regions"] if r["name"].startswith("WEIGHTS/0"))
        assert abs(drawn - pool / data[side]["size"]) < 0.03, (drawn, pool / data[side]["size"])


def test_where_bytes_changed_splits_moved_from_new(single):
    page, data = single["direct"].read_text(), json.loads(single["json"].read_text())
    fig = _figure(page, "Where bytes changed")
    moved, new = fig["data"]
    assert moved["name"].startswith("moved") and new["name"].startswith("new")
    assert fig["layout"]["yaxis"]["title"]["text"] == "share of the region changed (%)"
    pool = next(r for r in data["regions"] if r["name"] == "WEIGHTS/0/pool")
    i = next(k for k, h in enumerate(moved["hovertext"]) if h.startswith("WEIGHTS/0/pool"))
    assert moved["y"][i] == pytest.approx(100 * pool["moved_bytes"] / pool["b_size"]) and new["y"][i] == 0
    assert len(fig["layout"]["shapes"]) >= 5  # region bands
    # the waterfall's axis in the unit its labels use (issue 38: "size change (bytes)" under KiB labels)
    fall = _figure(page, "Size change by region")
    trace = fall["data"][0]
    assert fall["layout"]["yaxis"]["title"]["text"] == "size change (KiB)" and trace["text"][-1] == "+24 KiB"
    assert sum(trace["y"]) * 1024 == pytest.approx(data["size_delta"])
    assert trace["customdata"][-1] == "+24,576 bytes"


def _contrast(a: str, b: str) -> float:
    def lum(h: str) -> float:
        c = [int(h[i : i + 2], 16) / 255 for i in (1, 3, 5)]
        c = [x / 12.92 if x <= 0.03928 else ((x + 0.055) / 1.055) ** 2.4 for x in c]
        return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]

    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_settings_that_differ_are_marked_besides_colour(single):
    cells = _figure(single["direct"].read_text(), "Settings:")["data"][0]["cells"]
    names, fills, fonts = cells["values"][0], cells["fill"]["color"][0], cells["font"]["color"][0]
    soc = next(i for i, n in enumerate(names) if "soc_model" in n)
    assert names[soc] == "<b>≠ soc_model</b>" and cells["values"][1][soc] == "<b>0</b>"
    assert _contrast(fills[soc], "#ffffff") >= 3 and _contrast(fills[soc], fonts[soc]) >= 4.5
    same = next(i for i, n in enumerate(names) if n == "dsp_arch")
    assert fills[same] == "white"


def test_op_chart_is_horizontal_and_graph_names_keep_prompt_and_token(single):
    from q9diff.present.charts import short_names

    fig = _figure(single["direct"].read_text(), "Ops per kind")
    assert all(t["orientation"] == "h" for t in fig["data"])
    assert fig["layout"]["height"] >= 26 * len(fig["data"][0]["y"])
    labels = _figure(single["direct"].read_text(), "Size change by region")["data"][0]["x"]
    assert any("prompt" in x for x in labels) and any("token" in x for x in labels)
    # Real graph names, shorter than they are: the word that tells them apart stays.
    names = ["prompt_ar32_cl128_1_of_2", "token_ar1_cl128_1_of_2"]
    assert short_names(names, 16) == ["prompt_ar32_…", "token_ar1_…"]
    assert short_names(["llama_v3_2_3b_prompt_ar128_cl4096_1_of_4"], 24)[0].startswith("llama_")


# --- the page -------------------------------------------------------------------------------------------


def test_pages_are_offline_small_titled_and_fit_a_phone(single, tmp_path):
    page = single["direct"].read_text()
    assert "<title>q9diff diff cand.bin vs ref.bin</title>" in page
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page
    assert 'src="http' not in page and "cdn.plot.ly" not in page
    assert single["direct"].stat().st_size < 2_600_000  # was 4.9 MB: plotly.js now goes in gzipped
    assert page.count("<div class='scroll'><table") == page.count("<table")


def _width_at_412(tmp_path: Path, page: Path) -> tuple[int, int]:
    """Headless Chromium lays a window out at 500 px at least, so the page is measured in a 412 px frame;
    only the tables and code blocks (which scroll sideways in their own box) may be wider."""
    probe, frame = tmp_path / "probe.html", tmp_path / "frame.html"
    measure = (
        "<script>addEventListener('load', () => setTimeout(() => parent.postMessage('W=' +"
        " document.documentElement.scrollWidth + ' iw=' + innerWidth, '*'), 3000));</script></body>"
    )
    probe.write_text(page.read_text().replace("</body>", measure))
    frame.write_text(
        "<!doctype html><title>wait</title><body style='margin:0'>"
        "<iframe src='probe.html' style='width:412px;height:1900px;border:0'></iframe>"
        "<script>addEventListener('message', (e) => { document.title = e.data; });</script>"
    )
    dom = _chromium(tmp_path, frame, 500, ["--dump-dom"]).stdout
    width, inner = map(int, re.search(r"<title>W=(\d+) iw=(\d+)</title>", dom).groups())
    return width, inner


@chromium
def test_page_does_not_overflow_at_412_px(single, tmp_path):
    width, inner = _width_at_412(tmp_path, single["direct"])
    assert inner == 412 and width <= 412


@chromium
@pytest.mark.parametrize(
    "args",
    [
        (str(QWEN / "local"), str(QWEN / "reference")),
        ("doctor", str(QWEN / "local"), str(QWEN / "reference")),
        (str(QWEN / "local"), "--target", "QCS9100"),
    ],
    ids=["set", "doctor", "target"],
)
def test_every_page_fits_a_phone(args, tmp_path):
    """issue 38: at a phone's 412 px no page is wider than the screen (tables scroll in their own box)."""
    page = tmp_path / "p.html"
    assert q9diff(*args, "--html", str(page)).returncode == 1
    width, inner = _width_at_412(tmp_path, page)
    assert inner == 412 and width <= 412


# --- Markdown -------------------------------------------------------------------------------------------


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: dict[str, list[str]] = {}
        self.open: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.open.append(tag)

    def handle_endtag(self, tag):
        if tag in self.open:
            self.open.remove(tag)

    def handle_data(self, data):
        for tag in set(self.open):
            self.text.setdefault(tag, []).append(data)


def _rendered(markdown: str) -> _Tags:
    from markdown_it import MarkdownIt

    tags = _Tags()
    tags.feed(MarkdownIt("commonmark").enable("table").render(markdown))
    return tags


def test_markdown_renders_tables_and_code_blocks(single, tmp_path):
    a, b = _pair(tmp_path)
    out = tmp_path / "r.md"
    r = q9diff(str(a), str(b), "--markdown", str(out))
    assert r.returncode == 1 and f"wrote the Markdown report: {out}" in r.stdout
    text = out.read_text()
    assert text.split("### Causes")[1] == single["md"].stdout.split("### Causes")[1]  # only the paths differ
    html = _rendered(text)
    assert html.tags.count("table") == 3  # causes, sizes, where the bytes went
    cells = " ".join(html.text["td"])
    assert "soc_model" in cells and "+24,576 B (+2.1%)" in cells
    code = " ".join(html.text["code"])
    assert 'HtpDeviceConfig(soc_model=77, dsp_arch="v73")' in code and "devices[0].soc_model = 77" in code
    # one copyable block per toolchain form, the candidate's first (qairt: no config beside this copy),
    # the other four folded in a <details>
    from q9diff.compare.toolchains import FORMS

    assert html.tags.count("pre") == len(FORMS) == 5 and html.tags.count("details") == 1
    assert html.text["pre"][0].startswith('HtpDeviceConfig(soc_model=77, dsp_arch="v73")')
    assert "Root cause: soc_model 0 → 77" in " ".join(html.text["strong"])


# --- hostile saved results ------------------------------------------------------------------------------


def _one_line(r) -> str:
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    return r.stderr


def test_a_malformed_saved_result_is_one_line(single, tmp_path):
    good = json.loads(single["json"].read_text())
    cases = {
        "notjson": "{ not json",
        "list": "[1, 2]",
        "schema": json.dumps({"schema": "q9diff.recipe/2"}),
        "missing": json.dumps({k: v for k, v in good.items() if k != "regions"}),
        "type": json.dumps(good | {"size_delta": "big"}),
        "huge": json.dumps(good | {"a": good["a"] | {"size": 10**400}}),
        "deep": '{"schema": "q9diff.diff/1", "a": ' + "[" * 100_000 + "]" * 100_000 + "}",
        "nan": json.dumps(good).replace('"size_delta": 24576', '"size_delta": NaN'),
        "binary": b"\xff\xfe\x00garbage",
    }
    for name, text in cases.items():
        path = tmp_path / f"{name}.json"
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        line = _one_line(q9diff("report", str(path), "--html", str(tmp_path / "out.html")))
        assert str(path) in line, line
        assert not (tmp_path / "out.html").exists()
    assert "expected a size (0 to 2^62)" in _one_line(q9diff("report", str(tmp_path / "huge.json")))
    assert "no 'regions'" in _one_line(q9diff("report", str(tmp_path / "missing.json")))
    assert _one_line(q9diff("report", str(tmp_path / "nothere.json"))).endswith("no such file\n")
    r = q9diff("report", str(single["json"]), "--html", str(single["json"]))
    assert "would overwrite" in _one_line(r) and json.loads(single["json"].read_text()) == good


def test_saved_results_whose_fields_do_not_fit_are_one_line_and_no_report_is_a_device(single, tmp_path):
    """A black-box review's finds: each was an internal error, an injection or a device replaced."""
    good = json.loads(single["json"].read_text())
    neg = json.loads(single["json"].read_text())
    neg["b"]["regions"][0]["size"] = -1
    cases = {
        "schema_list": good | {"schema": []},
        "soc_as_list": good | {"causes": [good["causes"][0] | {"a": [1, 2]}] + good["causes"][1:]},
        "negative_size": neg,
    }
    for name, data in cases.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(data))
        for extra in ([], ["--html", str(tmp_path / f"{name}.html")], ["--markdown", "-"]):
            r = q9diff("report", str(path), *extra)
            assert r.returncode in (1, 2) and "internal error" not in r.stderr and "Traceback" not in r.stderr
            if r.returncode == 2:
                assert str(path) in _one_line(r) and r.stdout == ""
    assert "expected a size" in _one_line(q9diff("report", str(tmp_path / "negative_size.json")))
    # a report is written again where it was written before (only the result itself is an input)
    out = tmp_path / "again.html"
    for _ in range(2):
        assert q9diff("report", str(single["json"]), "--html", str(out)).returncode == 1
    # a device or a link is not a report's file: /dev/null stays the device
    link = tmp_path / "link.html"
    link.symlink_to(out)
    for target in ("/dev/null", str(link)):
        assert "not a regular file" in _one_line(q9diff("report", str(single["json"]), "--markdown", target))
    assert Path("/dev/null").is_char_device() and link.is_symlink()


def test_a_doctor_result_with_an_unknown_severity_is_refused(tmp_path):
    saved = q9diff("doctor", str(QWEN / "local"), str(QWEN / "reference"), "--json")
    data = json.loads(saved.stdout)
    data["findings"][0]["severity"] = "x'><img src=x onerror=alert(1)>"
    path = tmp_path / "doctor.json"
    path.write_text(json.dumps(data))
    line = _one_line(q9diff("report", str(path), "--html", str(tmp_path / "d.html")))
    assert "expected one of error, warning, info" in line and not (tmp_path / "d.html").exists()


HOSTILE = "<img src=x onerror=alert(1)></script><script>alert(2)</script>| `` ** [x](javascript:alert(3))"


def test_strings_of_a_saved_result_are_escaped_in_every_presenter(single, tmp_path):
    data = json.loads(single["json"].read_text())
    data["a"]["path"] = HOSTILE
    data["a"]["graphs"][0]["name"] = HOSTILE
    data["a"]["regions"][0]["name"] = HOSTILE
    data["regions"][0]["name"] = HOSTILE
    data["causes"][0]["evidence"] = [HOSTILE]
    data["causes"][0]["a"] = HOSTILE
    data["settings"]["a"]["soc_model"] = HOSTILE
    data["suggestions"][0]["targets"]["qairt"] = HOSTILE + "\n```\n" + HOSTILE
    data["a"]["graphs"][0]["ops"] = [HOSTILE]
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(data))
    out, md = tmp_path / "h.html", tmp_path / "h.md"
    r = q9diff("report", str(path), "--html", str(out), "--markdown", str(md))
    assert r.returncode == 1, r.stderr
    page = out.read_text()
    # In the tables as &lt;img ...; in the charts' JSON as \u003cimg ...: never a tag.
    assert "<img" not in page and "<script>alert" not in page
    rendered = _rendered(md.read_text())
    assert "img" not in rendered.tags and "script" not in rendered.tags and "a" not in rendered.tags
    assert rendered.tags.count("pre") == 5  # a block per toolchain form: the value could not close its block
    assert "onerror=alert(1)" in r.stdout  # the terminal shows it as text
    if shutil.which("chromium"):  # as drawn: plotly made text of the labels, never an element
        dom = _chromium(tmp_path, out, 1400, ["--dump-dom"]).stdout
        assert dom.count('class="main-svg"') >= 10 and "onerror=alert(1)" in dom
        assert "<img" not in dom and "alert(2)</script>" not in dom


# --- doctor and verify ----------------------------------------------------------------------------------


def test_doctor_report_from_saved_json_leads_with_the_verdict_then_the_implicated(tmp_path):
    args = ["doctor", str(QWEN / "local"), "--reference", str(QWEN / "reference")]
    saved = q9diff(*args, "--json")
    assert saved.returncode == 1, saved.stderr
    (tmp_path / "d.json").write_text(saved.stdout)
    assert q9diff(*args, "--html", str(tmp_path / "direct.html")).returncode == 1
    r = q9diff("report", str(tmp_path / "d.json"), "--html", str(tmp_path / "r.html"))
    assert r.returncode == 1 and r.stdout.startswith(q9diff(*args).stdout)
    page = (tmp_path / "r.html").read_text()
    assert page == (tmp_path / "direct.html").read_text()
    # issue 45: the verdict is the page's first and largest heading, the findings follow, then the
    # hypotheses, implicated first
    body = page[page.index("<body>") :]
    assert body.startswith("<body>\n<h1 class='error'>Not ready: 1 error, 2 warnings</h1>")
    assert re.findall(r"<h1", body) == ["<h1"] and "no device named (--target DEVICE)" in body
    implicated = re.search(r"<h2>Hypotheses implicated</h2><ul class='implicated'>(.*?)</ul>", page).group(1)
    assert re.findall(r"<li>(\d) ", implicated) == ["6", "9"]
    ruled_out = re.search(r"<p class='ruled-out'><b>Ruled out:</b> (.*?)</p>", page).group(1)
    assert "6 VTCM" not in ruled_out and "1 split count" in ruled_out
    assert "<title>q9diff doctor local/genie_config.json: Not ready: 1 error, 2 warnings</title>" in page
    order = [
        page.index(h) for h in ("<h2>Findings</h2>", "<h2>Hypotheses implicated</h2>", "<h2>Checks passed")
    ]
    assert order == sorted(order)
    # a fix is a sentence: a paragraph that wraps, not a code block
    assert "<p class='fix'><b>fix:</b> set soc_model 77 (the reference" in page
    text = q9diff("report", str(tmp_path / "d.json"), "--markdown", "-").stdout
    assert text.startswith("## Not ready: 1 error, 2 warnings\n\nq9diff doctor: ")
    md = _rendered(text)
    # findings as a list, each fix a paragraph under it (issue 38: table cells clipped it; issue 45: a
    # sentence in a 200-character code block scrolled)
    assert "build.soc_model" in " ".join(md.text["strong"]) and "li" in md.tags and "pre" not in md.tags
    assert "set soc_model 77 (the reference's, QCS9100 / QCS9075)" in text.replace("\\", "")
    assert text.index("### Errors") < text.index("**Hypotheses implicated:** 6 VTCM 4 vs 8 MiB; 9 soc")


def test_doctor_says_the_runtime_and_device_it_was_asked_in_its_headline(tmp_path):
    """issue 45: `doctor BUNDLE --runtime 2.48 --html` had "No hypothesis implicated" as its largest
    heading, above the finding that the bundle will not load, and no "QAIRT 2.48" in its header."""
    page = tmp_path / "d.html"
    args = ["doctor", str(QWEN / "reference"), "--runtime", "2.48"]
    r = q9diff(*args, "--html", str(page), "--markdown", str(tmp_path / "d.md"))
    assert r.returncode == 1, r.stderr
    assert r.stdout.startswith("Will not load on QAIRT 2.48: 1 error\n")
    body = page.read_text().split("<body>", 1)[1]
    assert body.startswith("\n<h1 class='error'>Will not load on QAIRT 2.48: 1 error</h1>")
    assert "implicated" not in body.split("<details>", 1)[0]  # no hypothesis heading when none is
    assert (tmp_path / "d.md").read_text().startswith("## Will not load on QAIRT 2.48: 1 error\n")
    aimed = q9diff(*args[:2], "--runtime", "2.51", "--target", "QCS9100", "--markdown", "-")
    assert aimed.returncode == 0 and aimed.stdout.startswith("## Loads on QCS9100 and QAIRT 2.51: no error")
    assert "**Hypotheses" not in aimed.stdout


def test_verify_report_from_saved_json_and_its_drift_chart(tmp_path):
    from q9diff.runners.local import LocalRunner

    if LocalRunner().missing():
        pytest.skip(LocalRunner().missing())
    args = ["verify", str(QWEN / "local"), str(QWEN / "reference"), "--steps", "3"]
    saved = q9diff(*args, "--json", "--html", str(tmp_path / "direct.html"))
    assert saved.returncode == 0, saved.stderr
    (tmp_path / "v.json").write_text(saved.stdout)
    r = q9diff("report", str(tmp_path / "v.json"), "--html", str(tmp_path / "r.html"))
    assert r.returncode == 0 and "PASS" in r.stdout
    page = (tmp_path / "r.html").read_text()
    assert page == (tmp_path / "direct.html").read_text()
    assert "<title>q9diff verify local vs reference: PASS</title>" in page
    fig = _figure(page, "Drift per step")
    assert fig["layout"]["xaxis"]["dtick"] == 1 and fig["layout"]["xaxis"]["tickformat"] == "d"
    styles = {(t["line"]["dash"], t["marker"]["symbol"]) for t in fig["data"]}
    assert len(styles) == len({t["name"] for t in fig["data"]}) == 3  # each pair its dash and marker
    # issue 38: no cosine tolerance the verdict does not apply; one line, the reference's own lowest
    # cosine vs the CPU, so every candidate point is read against the drift a good build shows
    lines = [s for s in fig["layout"]["shapes"] if s.get("y0") == s.get("y1")]
    ref = [t for t in fig["data"] if t["name"] == "reference vs cpu" and t["yaxis"] == "y2"][0]
    assert [s["y0"] for s in lines] == [min(y for y in ref["y"] if y is not None)]
    said = [a["text"] for a in fig["layout"]["annotations"] if "lowest cosine" in a["text"]]
    assert len(said) == 1 and said[0].endswith("; verdict: the tokens")
    assert not any("tolerance" in a["text"] for a in fig["layout"]["annotations"])


def test_doctor_writes_markdown_and_no_two_reports_share_a_file(tmp_path):
    out = tmp_path / "d.md"
    r = q9diff("doctor", str(QWEN / "local"), str(QWEN / "reference"), "--markdown", str(out))
    assert r.returncode == 1 and f"wrote the Markdown report: {out}" in r.stdout
    assert out.read_text().startswith("## Not ready: 1 error, 2 warnings")
    same = tmp_path / "x.out"
    for args in (("doctor", str(QWEN / "local")), (str(QWEN / "local"), str(QWEN / "reference"))):
        line = _one_line(q9diff(*args, "--html", str(same), "--markdown", str(same)))
        assert "name one file" in line and not same.exists()


def test_markdown_names_both_builds_first_and_cuts_no_word():
    """issue 45: a set diff's Markdown never named the two builds; the target Markdown cut an evidence
    cell mid-word with no ellipsis, and headed its columns `reference` where there is none."""
    text = q9diff(str(QWEN / "local"), str(QWEN / "reference"), "--markdown", "-").stdout
    assert text.startswith(
        f"## q9diff set diff: local vs reference\n\ncandidate {QWEN / 'local'} (2 parts) vs reference"
        f" {QWEN / 'reference'} (2 parts)\n".replace("_", "\\_")
    )
    target = q9diff(str(QWEN / "local"), "--target", "QCS9100", "--markdown", "-").stdout
    data = json.loads(q9diff(str(QWEN / "local"), "--target", "QCS9100", "--json").stdout)
    assert "| cause | role | build | QCS9100 | bytes | evidence |" in target and "| reference |" not in target
    rows = [ln for ln in target.splitlines() if ln.startswith("| ") and ln.count(" | ") == 5][1:]
    evidence = {c["name"]: "; ".join(c["evidence"]) for c in data["causes"]}
    assert len(rows) == len(data["causes"]) >= 3
    for row in rows:
        name, cell = row.split(" | ")[0][2:].replace("\\", ""), row.rsplit(" | ", 1)[1][:-2]
        said = cell.replace("\\", "").replace("&#8203;", "")
        whole = evidence[name]
        assert said == whole or (
            said.endswith(" …") and whole.startswith(said[:-2]) and whole[len(said) - 2] in " ,;"
        )
    assert any(row.endswith(" … |") for row in rows)  # the long one is cut, and says so
