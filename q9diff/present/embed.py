"""plotly.js and each chart into a page: plotly.js inlined once (gzipped, unpacked in the browser), each
chart its figure's JSON beside an empty div, drawn when the page loads (q9diff.present.html, pages)."""

from q9diff.present.figures import chart_json

# Where plotly.js goes, filled in last so that it is packed while the page is drawn (start_packing). No
# string of a result can look like it: the page escapes control characters (\x00, \u0000).
PLOTLY_JS = "\0plotly.js\0"


# Each figure fitted to the width it is drawn at, before plotly draws it (plotly wraps no title, and a
# legend or an annotation placed for 1400 px ran off a phone's 412): on a page narrower than 600 px the
# figure's `meta.narrow` (charts.narrow) is applied; the title, the axis titles and the annotations are
# broken at spaces into lines that fit; the top margin holds the tool bar, the title's lines and what the
# chart draws above its plot (`meta.above`), the bottom one the x axis' title and the rows of a legend
# placed at the bottom of the figure (`yref: container`); the chart's box takes the figure's height.
FIT_JS = """const q9fit = (fig, div) => {
  const width = div.clientWidth || 800, L = fig.layout, meta = L.meta || {};
  const merge = (to, from) => {
    for (const [k, v] of Object.entries(from)) {
      const both = v && typeof v === "object" && !Array.isArray(v) && to[k] && typeof to[k] === "object";
      if (both) merge(to[k], v); else to[k] = v;
    }
  };
  if (meta.narrow && width < 600) {
    merge(L, meta.narrow.layout || {});
    (meta.narrow.traces || []).forEach((t, i) => merge(fig.data[i], t));
  }
  const wrap = (t, px) => {
    if (!t || typeof t.text !== "string") return 0;
    const per = Math.max(12, Math.floor(px / (((t.font && t.font.size) || 14) * 0.58)));
    const lines = [];
    for (const word of t.text.split(/<br>|\\s+/).filter((w) => w)) {
      const last = lines.length - 1;
      if (last >= 0 && (lines[last] + " " + word).length <= per) lines[last] += " " + word;
      else lines.push(word);
    }
    t.text = lines.join("<br>");
    return lines.length;
  };
  const m = Object.assign({l: 80, r: 80, t: 100, b: 80}, L.margin);
  if (width < 600) { m.l = Math.min(m.l, 50); m.r = Math.min(m.r, 16); }
  const plotWidth = width - m.l - m.r;
  const rows = wrap(L.title, width * 0.92 - 10);
  if (rows) {
    Object.assign(L.title, {x: 0.02, xanchor: "left", xref: "container", y: 1, yanchor: "top"});
    Object.assign(L.title, {yref: "container", pad: {t: 40}});  // under plotly's tool bar
    m.t = 40 + 20 * rows + (meta.above || 0) + 16;
  }
  const plotHeight = (L.height || 450) - m.t - m.b;
  for (const key of Object.keys(L)) {
    if (/^xaxis\\d*$/.test(key) && L[key].title) wrap(L[key].title, plotWidth);
    if (/^yaxis\\d*$/.test(key) && L[key].title) wrap(L[key].title, plotHeight);
  }
  for (const a of L.annotations || []) if (typeof a.text === "string") wrap(a, plotWidth);
  if (L.legend && L.legend.yref === "container") {
    const shown = fig.data.filter((t) => t.showlegend !== false && t.name);
    const wide = shown.reduce((sum, t) => sum + 40 + 7 * String(t.name).length, 0);
    m.b = Math.max(m.b, (meta.below || 70) + 24 * Math.ceil(wide / Math.max(width - 20, 1)));
  }
  L.margin = m;
  if (L.height) div.style.height = L.height + "px";
};"""

# plotly.js (4.8 MB in plotly 6's package, which ships no partial bundle) goes in gzipped and base64'd
# (2 MB), unpacked by the browser's DecompressionStream (Chrome 80, Firefox 113, Safari 16.4): the page
# stays one offline file at less than half the size. Each chart is its figure's JSON beside an empty div.
LOADER = """<script>(async () => {
  FIT_JS
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
    const fig = JSON.parse(el.textContent), div = document.getElementById(el.dataset.chart);
    q9fit(fig, div);
    Plotly.newPlot(div, fig.data, fig.layout, {responsive: true, displaylogo: false});
  }
})();</script>""".replace("FIT_JS", FIT_JS)


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
