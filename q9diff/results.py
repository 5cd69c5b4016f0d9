"""The results the Python API returns (q9diff.api), the same the command line prints from: each frozen,
each with `to_json()` (the documented schema, equal to what `--json` prints), `to_html()` (the page
`--html` writes), `to_markdown()`, `show()` (the terminal view), a `repr()` of one line (what it is and
its verdict: the data stays in `to_json()`) and `_repr_html_()`, the report as a notebook shows it (a
fragment that leaves the notebook's own styles alone, q9diff.present.notebook). They hold the compared
objects as the presenters read them; nothing here computes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

# Imported, not only named for type checkers, so typing.get_type_hints resolves every public method's
# signature and Build's fields: none loads the engines (every function of the API resolves its paths with
# q9diff.inputs, q9diff.open opens with q9diff.read.binary; the results are data).
from q9diff.doctor.result import DoctorResult, Finding
from q9diff.inputs import Input
from q9diff.layers.result import Divergence, LayersResult
from q9diff.read.binary import ContextBinary

if TYPE_CHECKING:  # the diff engine (numpy and the block search): loaded only by a diff
    from q9diff.compare.diff import DiffResult
    from q9diff.compare.sets import SetDiff

LOAD_SCHEMA = "q9diff.load/1"


def _saved(data):
    """`data` as JSON gives it back: a fresh copy, so a result stays as it was made."""
    from q9diff.present.as_json import as_saved  # start-up: present.as_json

    return as_saved(data)


class _Drawn:
    """What every result draws from its JSON: the HTML page, the Markdown, the notebook's view."""

    def to_json(self) -> dict:
        raise NotImplementedError

    def to_html(self) -> str:
        """The self-contained HTML report, as `--html` writes it."""
        from q9diff.present.reports import html_page  # start-up: present.reports

        return html_page(self.to_json())

    def to_markdown(self) -> str:
        """The Markdown report (CI summaries, pull-request comments), as `--markdown` writes it."""
        from q9diff.present.reports import markdown_text  # start-up: present.reports

        return markdown_text(self.to_json())

    def _repr_html_(self) -> str:
        """Jupyter's hook: the report inline, as a fragment of the notebook's page."""
        from q9diff.present.notebook import fragment  # start-up: present.notebook

        return fragment(self.to_html())

    def _said(self) -> str:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<q9diff.{type(self).__name__} {self._said()}>"


class _Judged(_Drawn):
    """What a diff and a target judgement share, read from their JSON (`data`): the causes, the fix and
    whether the build loads where named; `_subject` is the path judged."""

    data: dict

    @property
    def _subject(self) -> Path:
        raise NotImplementedError

    @property
    def causes(self) -> list[dict]:
        """The settings that differ (role `root`) and their effects, with both values and the evidence."""
        return _saved(self.data["causes"])

    @property
    def suggestions(self) -> list[dict]:
        """The fix: each setting and value, with its line for every tool (qairt, the extension config...)."""
        return _saved(self.data["suggestions"])

    @property
    def load(self) -> LoadReport | None:
        """Will the build load on the target or runtime named, when one was."""
        load = self.data.get("load")
        return None if load is None else LoadReport(self._subject, load)

    def to_json(self) -> dict:
        return _saved(self.data)


@dataclass(frozen=True, eq=False, repr=False)
class Build:
    """What a path holds (q9diff.open): its kind as q9diff tells it (`context binary`, `folder of parts`,
    `Genie bundle`, `Genie config`, `container of contexts`, ...) and its context binaries in part order
    (`FILE#NAME` for one of several in an .onnx, .tflite or .pte)."""

    path: Path
    kind: str
    parts: tuple[Path, ...]
    resolved: Input  # the path as q9diff.inputs resolved it: what every function given this Build reads

    @property
    def is_set(self) -> bool:
        return self.parts != (self.path,)

    def contexts(self) -> Iterator[ContextBinary]:
        """Each part opened, in order (mapped lazily: a 1 GB part costs nothing until read)."""
        for p in self.resolved.parts:
            yield p.open()

    def to_json(self) -> dict:
        """`q9diff.inspect/1` of a single context, `q9diff.inspect-set/1` of several, as `inspect --json`."""
        from q9diff.compare.summary import inspect_summary  # start-up: compare.summary

        summaries = [inspect_summary(cb) for cb in self.contexts()]
        if len(summaries) == 1 and not self.is_set:
            return _saved(summaries[0])
        return _saved({"schema": "q9diff.inspect-set/1", "path": str(self.path), "contexts": summaries})

    def to_html(self) -> str:
        """The page `inspect --html` writes."""
        from q9diff.present.pages import render_inspect  # start-up: present.pages

        data = self.to_json()
        return render_inspect(data.get("contexts", [data]))

    def to_markdown(self) -> str:
        """Each context as Markdown: what built it, its target, its graphs' settings, its regions."""
        from q9diff.present.markdown import render_inspect  # start-up: present.markdown

        data = self.to_json()
        return render_inspect(data.get("contexts", [data]))

    def _repr_html_(self) -> str:
        from q9diff.present.notebook import fragment  # start-up: present.notebook

        return fragment(self.to_html())

    def __repr__(self) -> str:
        parts = f", {len(self.parts)} parts" if self.is_set else ""
        return f"<q9diff.Build {str(self.path)!r}: {self.kind}{parts}>"

    def show(self) -> None:
        """The terminal view of `q9diff inspect`, each context in turn."""
        from q9diff.compare.summary import inspect_summary  # start-up: compare.summary
        from q9diff.present.terminal_inspect import print_contexts  # start-up: present.terminal_inspect

        binaries = list(self.contexts())
        print_contexts(binaries, [inspect_summary(cb) for cb in binaries])


SWAPPED = "warning: arguments swapped? "  # how a DiffReport's note on a reference that looks broken begins


@dataclass(frozen=True, eq=False, repr=False)
class DiffReport(_Judged):
    """Why `candidate` differs from `reference` (q9diff.diff): `q9diff.diff/1` for two files,
    `q9diff.setdiff/1` for two sets. `notes`: what the command line says on stderr (the counterpart part
    chosen, a reference that looks like the broken build, one built for another device)."""

    candidate: Path
    reference: Path
    data: dict  # as computed; to_json() gives the JSON copy
    result: DiffResult | SetDiff
    notes: tuple[str, ...] = ()

    @property
    def schema(self) -> str:
        return self.data["schema"]

    @property
    def identical(self) -> bool:
        """No difference in any byte (of any part)."""
        return self.data["identical"]

    @property
    def _subject(self) -> Path:
        return self.candidate

    def _said(self) -> str:
        from q9diff.present.verdict import short_verdict  # start-up: present.verdict

        verdict = "identical" if self.identical else short_verdict(self.data["causes"])
        swapped = "; arguments swapped? (see .notes)" if self.data.get("reference_looks_wrong") else ""
        said = f"{verdict}{_load_said(self.data)}{swapped}"
        return f"{str(self.candidate)!r} vs {str(self.reference)!r}: {said}"

    def show(self, verbose: bool = False) -> None:
        """The terminal view, as `q9diff CANDIDATE REFERENCE` (-v: `verbose`) prints it."""
        from q9diff.present.terminal_diff import print_set, show_pair  # start-up: present.terminal_diff
        from q9diff.present.terminal_target import print_load  # start-up: present.terminal_target

        if self.data["schema"] == "q9diff.setdiff/1":
            print_set(self.result, self.data, verbose)
        else:
            show_pair(self.result, verbose, self.data)
        print_load(self.data.get("load"))


@dataclass(frozen=True, eq=False, repr=False)
class TargetReport(_Judged):
    """A build judged against a device with no reference (q9diff.target): `q9diff.target/1`, with
    `load` (will each part load on the device, and on the runtime named)."""

    path: Path
    data: dict

    @property
    def matches(self) -> bool:
        """Every setting the device determines is as AI Hub's builds for it use."""
        return self.data["matches"]

    @property
    def _subject(self) -> Path:
        return self.path

    def _said(self) -> str:
        from q9diff.present.verdict import short_verdict  # start-up: present.verdict

        verdict = "matches" if self.matches else short_verdict(self.data["causes"], "differs")
        name = self.data["target"]["name"]
        return f"{str(self.path)!r} against {name}: {verdict}{_load_said(self.data)}"

    def show(self, verbose: bool = False) -> None:
        """The terminal view, as `q9diff PATH --target DEVICE` prints it (`verbose`: as with -v)."""
        from q9diff.present.terminal_target import print_target  # start-up: present.terminal_target

        print_target(self.data, verbose)


@dataclass(frozen=True, eq=False, repr=False)
class LoadReport(_Drawn):
    """Will each part of `path` load on the runtime and device named (q9diff.will_load): the worst
    verdict (`loads`, `loads, recompile advised`, `will not load`) and each part's findings. Its JSON is
    `q9diff.load/1`: the `load` object of `q9diff.diff/1` and `q9diff.target/1`, with its schema and path."""

    path: Path
    data: dict

    @property
    def verdict(self) -> str:
        return self.data["verdict"]

    @property
    def loads(self) -> bool:
        """No part is refused (a recompile may still be advised)."""
        return self.data["verdict"] != "will not load"

    def to_json(self) -> dict:
        return _saved({"schema": LOAD_SCHEMA, "path": str(self.path), **self.data})

    def _said(self) -> str:
        parts = len(self.data["parts"])
        return f"{str(self.path)!r}{_load_said(self.data, ': ')} ({parts} part{'s' if parts != 1 else ''})"

    def to_html(self) -> str:
        from q9diff.present.pages import render_load  # start-up: present.pages

        return render_load(self.to_json())

    def to_markdown(self) -> str:
        from q9diff.present.markdown import render_load  # start-up: present.markdown

        return render_load(self.to_json())

    def show(self) -> None:
        from q9diff.present import terminal_target as view  # start-up: present.terminal_target

        view.print_refusal(self.data)
        view.print_load(self.data)


@dataclass(frozen=True, eq=False, repr=False)
class DoctorReport(_Drawn):
    """A Genie bundle checked (q9diff.doctor): `q9diff.doctor/1`. `errors` and `warnings` are the
    findings of that severity; a build script fails on `errors`, as `q9diff doctor` exits 1 on them."""

    result: DoctorResult
    files: tuple[Path, ...] = ()  # every file read, the reference's too

    @property
    def findings(self) -> tuple[Finding, ...]:
        return self.result.findings

    @property
    def errors(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.result.findings if f.severity == "error" and not f.ruled_out)

    @property
    def warnings(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.result.findings if f.severity == "warning" and not f.ruled_out)

    def hypotheses(self) -> dict[int, dict]:
        """Each of the nine hypotheses: implicated, ruled out or open, and why."""
        return self.result.hypotheses()

    def to_json(self) -> dict:
        return _saved(self.result.to_json())

    def _said(self) -> str:
        from q9diff.present.verdict import doctor_headline  # start-up: present.verdict

        return f"{self.result.bundle!r}: {doctor_headline(self.result)[0]}"

    def show(self) -> None:
        """The terminal view, as `q9diff doctor` prints it."""
        from q9diff.present.terminal_doctor import print_report  # start-up: present.terminal_doctor

        print_report(self.result)


def _load_said(data: dict, lead: str = "; ") -> str:
    """`; will not load on QCS9100 and QAIRT 2.48`: a result's load verdict where one was asked, else ''.
    `data`: a diff's or a target's JSON, or its `load` object itself."""
    from q9diff.present.verdict import load_rows  # start-up: present.verdict

    load = data.get("load", data if "parts" in data and "verdict" in data else None)
    if not load:
        return ""
    head = load_rows(load)[0].removeprefix("Will it load on ")  # `QCS9100 and QAIRT 2.48: will not load`
    where, _, verdict = head.rpartition(": ")
    return f"{lead}{verdict} on {where}"


@dataclass(frozen=True, eq=False, repr=False)
class LayersReport(_Drawn):
    """The first tensor where a build leaves its float model (q9diff.layers): `q9diff.layers/1`.
    `first_divergence` is None when no node adds an error that stands out; `result` holds every tensor's
    figures per graph."""

    result: LayersResult

    @property
    def first_divergence(self) -> Divergence | None:
        return self.result.first_divergence

    @property
    def passed(self) -> bool:
        """No divergence (as `q9diff layers` exits 0)."""
        return self.result.passed

    def to_json(self) -> dict:
        return _saved(self.result.to_json())

    def show(self) -> None:
        """The terminal view, as `q9diff layers` prints it."""
        from q9diff.present.terminal_layers import print_layers  # start-up: present.terminal_layers

        print_layers(self.result)

    def __repr__(self) -> str:
        fd = self.first_divergence
        said = (
            "no divergence"
            if fd is None
            else f"first divergence {fd.tensor} ({fd.op} {fd.node}) in {fd.graph}"
        )
        compiles = len(self.result.compiles)
        return f"<LayersReport {self.result.candidate}: {said}; {compiles} compiles>"
