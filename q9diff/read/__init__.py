"""Reading the formats: the walkers over the byte layouts of `q9diff.formats`. Those layouts live in the
checkout's formats/ folder and become q9diff.formats when q9diff is installed (pyproject.toml maps them),
so a source tree run in place without an install is told so in one line rather than a traceback."""

from importlib.util import find_spec

from q9diff.errors import Q9Error

if find_spec("q9diff.formats") is None:
    raise Q9Error(
        "q9diff.formats (the byte layouts in formats/) is missing: this q9diff is a source tree that was"
        " never installed; run `pip install -e .` in it (or `pip install .`)"
    )
