"""A report as a notebook shows it (`_repr_html_`): a fragment of the notebook's page, not a page.

The HTML presenters write whole pages (`<!doctype html>`, a `body{...}` style, plotly.js inlined). Put
into a notebook as Jupyter does, such a page restyled the notebook itself (its font, margin and width)
and added ~2 MB of plotly.js to the `.ipynb` per result shown. The fragment is the page's body inside
one element, with the page's style scoped to that element, chart ids of its own (two results in one
notebook never share a `chart-0`), and plotly.js sent once per Python process: the first fragment with
charts carries it, and every fragment's loader draws with the one that fragment unpacked.
"""

from __future__ import annotations

import re
import secrets

from q9diff.present import embed
from q9diff.present.figures import plotly_packed

ROOT_CLASS = "q9diff-report"
_sent = False  # plotly.js went out with a fragment of this process: the next ones wait for it

# Every fragment's loader: plotly.js from the first fragment that carried it (window.q9diffPlotly, a
# promise), or a Plotly the notebook already has; then this fragment's charts, and nothing outside it.
# plotly.js is run with `define`, `module` and `exports` hidden, so that under the classic notebook's
# require.js it sets window.Plotly instead of registering an AMD module nobody asks for.
LOADER = """<script>(async () => {
  FIT_JS
  const root = document.getElementById("ROOT_ID");
  const charts = root.querySelectorAll("script[data-chart]");
  const div = (el) => root.querySelector("#" + CSS.escape(el.dataset.chart));
  const say = (text) => charts.forEach((el) => { div(el).textContent = text; });
  const packed = root.querySelector("script.q9diff-plotly-gz");
  if (packed && !window.q9diffPlotly && !window.Plotly) {
    window.q9diffPlotly = (async () => {
      const text = atob(packed.textContent);
      const bytes = Uint8Array.from(text, (c) => c.charCodeAt(0));
      const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
      const code = document.createElement("script");
      code.textContent = "(function (define, module, exports) {\\n" + await new Response(stream).text()
        + "\\n})();";
      document.head.appendChild(code);
      return window.Plotly;
    })();
  }
  for (let i = 0; i < 100 && !window.q9diffPlotly && !window.Plotly; i++) {
    await new Promise((done) => setTimeout(done, 100));
  }
  let plotly = window.Plotly;
  try { plotly = window.q9diffPlotly ? await window.q9diffPlotly : plotly; } catch (e) { plotly = null; }
  if (!plotly) {
    say("The charts need plotly.js, which q9diff sends once per Python session with the first result"
      + " shown: show that result again, or save result.to_html() as a page.");
    return;
  }
  for (const el of charts) {
    const fig = JSON.parse(el.textContent);
    q9fit(fig, div(el));
    plotly.newPlot(div(el), fig.data, fig.layout, {responsive: true, displaylogo: false});
  }
})();</script>""".replace("FIT_JS", embed.FIT_JS)

_STYLE = re.compile(r"<style>(.*?)</style>", re.S)
_PACKED = re.compile(r'<script type="text/plain" id="plotly-gz">[^<]*</script>')


def scoped(css: str, root: str) -> str:
    """`css` with every rule applying inside `root` only: `body` becomes the root itself, any other
    selector a descendant of it; @media blocks keep their condition, their rules scoped alike. Written for
    the presenters' own style sheets (flat rules, @media blocks), not for CSS at large."""
    out, i = [], 0
    while True:
        brace = css.find("{", i)
        if brace < 0:
            return "".join(out)
        prelude = css[i:brace].strip()
        if prelude.startswith("@"):
            depth, j = 1, brace + 1
            while depth:
                depth += {"{": 1, "}": -1}.get(css[j], 0)
                j += 1
            out.append(f"{prelude}{{{scoped(css[brace + 1 : j - 1], root)}}}")
        else:
            j = css.index("}", brace) + 1
            selectors = ",".join(_one(s.strip(), root) for s in prelude.split(","))
            out.append(f"{selectors}{css[brace:j]}")
        i = j


def _one(selector: str, root: str) -> str:
    if selector == "body" or selector.startswith(("body ", "body.")):
        return root + selector[4:]
    return f"{root} {selector}"


def fragment(page: str, plotly: bool | None = None) -> str:
    """The report `page` (a presenter's whole page) as a fragment of a notebook: one element holding its
    body, its style scoped to it, its own chart ids. `plotly`: carry plotly.js (True), leave it to an
    earlier fragment (False), or carry it the first time a fragment with charts is made (None)."""
    global _sent
    token = f"q9diff-{secrets.token_hex(4)}"
    style = _STYLE.search(page)
    body = page.split("<body>\n", 1)[1].rsplit("\n</body>", 1)[0]
    charts = 'class="plotly-graph-div"' in body
    body = _PACKED.sub("", body, count=1).replace(embed.LOADER, "", 1)
    for attribute in ("id", "data-chart"):
        body = body.replace(f'{attribute}="chart-', f'{attribute}="{token}-chart-')
    root = f".{ROOT_CLASS}#{token}"
    css = (scoped(style.group(1), root) if style else "") + f"{root}{{margin:0}}"  # the cell's own margin
    tail = ""
    if charts:
        carry = (not _sent) if plotly is None else plotly
        if carry:
            tail += f'<script type="text/plain" class="q9diff-plotly-gz">{plotly_packed()}</script>'
            _sent = _sent or plotly is None
        tail += LOADER.replace("ROOT_ID", token)
    return f'<div class="{ROOT_CLASS}" id="{token}"><style>{css}</style>\n{body}\n{tail}</div>'
