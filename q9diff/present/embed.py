"""plotly.js and each chart into a page: plotly.js inlined once (gzipped, unpacked in the browser), each
chart its figure's JSON beside an empty div, drawn when the page loads (q9diff.present.html, pages)."""

from q9diff.present.charts import chart_json

# Where plotly.js goes, filled in last so that it is packed while the page is drawn (start_packing). No
# string of a result can look like it: the page escapes control characters (\x00, \u0000).
PLOTLY_JS = "\0plotly.js\0"


# plotly.js (4.8 MB in plotly 6's package, which ships no partial bundle) goes in gzipped and base64'd
# (2 MB), unpacked by the browser's DecompressionStream (Chrome 80, Firefox 113, Safari 16.4): the page
# stays one offline file at less than half the size. Each chart is its figure's JSON beside an empty div.
LOADER = """<script>(async () => {
  const charts = () => document.querySelectorAll("script[data-chart]");
  const say = (text) => charts().forEach((el) => {
    document.getElementById(el.dataset.chart).textContent = text; });
  if (typeof DecompressionStream === "undefined") {
    say("This browser cannot unpack the charts (it has no DecompressionStream); the tables say it all.");
    return;
  }
  const text = atob(document.getElementById("plotly-gz").textContent);
  const packed = Uint8Array.from(text, (c) => c.charCodeAt(0));
  const stream = new Blob([packed]).stream().pipeThrough(new DecompressionStream("gzip"));
  const code = document.createElement("script");
  code.textContent = await new Response(stream).text();
  document.head.appendChild(code);
  if (document.readyState === "loading") {
    await new Promise((done) => document.addEventListener("DOMContentLoaded", done));
  }
  for (const el of charts()) {
    const fig = JSON.parse(el.textContent);
    Plotly.newPlot(el.dataset.chart, fig.data, fig.layout, {responsive: true, displaylogo: false});
  }
})();</script>"""


class Charts:
    """Charts of one page: plotly.js inlined once, before the first; div ids numbered, not random, so
    the same result always gives the same page."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self, figs) -> str:
        out = []
        if self.n == 0 and figs:
            out.append(f'<script type="text/plain" id="plotly-gz">{PLOTLY_JS}</script>{LOADER}')
        for f in figs:
            text = chart_json(f)
            height = (f["layout"].get("height") if isinstance(f, dict) else f.layout.height) or 450
            out.append(
                f'<div id="chart-{self.n}" class="plotly-graph-div"'
                f' style="height:{height}px;width:100%"></div>'
                f'<script type="application/json" data-chart="chart-{self.n}">{text}</script>'
            )
            self.n += 1
        return "".join(out)
