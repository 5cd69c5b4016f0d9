"""The terminal view of what rebuilds: `suggest`'s edits and its check after --recompile, `recompile`'s
files written, and `steps`' table (each root-cause setting added in turn, against the reference)."""

from __future__ import annotations

from pathlib import Path

from q9diff.errors import printable
from q9diff.present.terminal import console, text, whole, wrote


def print_models_only(evidence) -> None:
    """Builds of different models: the reference's settings are what can carry over."""
    from q9diff.present.verdict import models_line  # start-up: present.verdict

    console.print(text((models_line(evidence) + " Only settings are suggested.", "bold")))


def print_edits(edits) -> None:
    """Each planned edit as its unified diff: a patch, never wrapped, so it can be copied."""
    from rich.text import Text

    for e in edits:
        block = printable(e.unified, keep="\n\t") if e.unified else printable(f"{e.path}: already matches")
        console.print(Text(block), soft_wrap=True)


def print_written(written: list[tuple[Path, Path]]) -> None:
    for path, backup in written:
        wrote(path, f"the fixed config (the original is kept as {backup})")


def print_next_rebuild(recipe: Path | None, against: str) -> None:
    """After --apply: the binaries are still the old ones. With a recipe among the files fixed, the two
    commands that rebuild and diff again; else what to do with the build's own tools, then the diff."""
    from shlex import quote

    if recipe is not None:
        # into q9diff-out, the folder suggest --recompile writes by default
        steps = f"q9diff recompile {quote(str(recipe))} --out q9diff-out && q9diff q9diff-out"
        console.print(text(("next: ", "bold"), steps + f" {against}"), soft_wrap=True)
    else:
        console.print(
            text(("next: ", "bold"), "rebuild with the fixed config, then diff the new build again: ",
                 whole(f"q9diff NEW_BUILD {against}"))
        )  # fmt: skip


def print_dry_run() -> None:
    console.print("--dry-run: nothing written")


def print_recipe_kept(target: Path) -> None:
    """A recipe.json beside the rebuilt binaries that q9diff did not write is left as it was."""
    console.print(text(f"note: {target} exists and is not a q9diff recipe; left as it was"))


def print_rebuilt(built: list[Path], out: Path) -> None:
    console.print(  # one line, for the paths to be copied
        text(f"rebuilt {len(built)} binaries into {out} (recipe: {out / 'recipe.json'})"), soft_wrap=True
    )


def print_recompiled(built: list[Path], recipe: Path | None) -> None:
    """`recompile`: each binary written, and the recipe left beside them (when it was written there)."""
    for b in built:
        console.print(text(f"wrote {b}"), soft_wrap=True)
    if recipe is not None:
        console.print(text(f"wrote {recipe} (the recipe beside the binaries)"), soft_wrap=True)


def print_gap_to_target(device_name: str, left) -> None:
    """After --recompile against a device: every setting it determines as AI Hub builds for it, or not."""
    from q9diff.present.verdict import root_line  # start-up: present.verdict

    if not left:
        line = f"Gap closed: every setting {device_name} determines is as AI Hub builds for it."
        console.print(text((line, "bold green")))
    else:
        console.print(text(f"Gap not closed; against {device_name}: {root_line(left)}"))


def print_gap_to_reference(data: dict, roots: list[str]) -> None:
    """After --recompile against a reference: the new binaries' sizes, and identical or what is left."""
    from q9diff.units import sizes  # start-up: units

    console.print(f"new vs reference: {sizes(data['a_total'], data['b_total'])}")
    if data["identical"]:
        console.print(
            text(("Gap closed: the rebuilt binaries are byte-identical to the reference.", "bold green"))
        )
    else:
        console.print(text(f"Gap not closed; root causes left: {', '.join(roots) or 'none (data only)'}"))


def print_steps(result, candidate: Path, reference: Path, builds: Path) -> None:
    """`steps`: per step the settings added, the size, the delta and the bytes changed against the
    reference (moved / new), and which side it is byte-identical to."""
    from rich.table import Table

    from q9diff.units import percent_text  # start-up: units

    console.print(
        text(
            "steps from ",
            whole(str(candidate)),
            " to ",
            whole(str(reference)),
            " (bytes; Δ, changed, new: against the reference; %: Δ of the reference's size; the moved"
            " bytes are in --json and --html)",
        )
    )
    t = Table(box=None, padding=(0, 0, 0, 1), pad_edge=False, header_style="bold")
    # 80 columns hold the longest setting the steps add (`optimization_level=3`) beside sizes of MBs: the
    # header says they are added, so the rows say only which, and the moved bytes (changed - new) stay in
    # --json and --html; a longer setting folds, never cut
    cols = ("#", "settings added", "size", "Δ ref", "%", "changed", "new", "same as")
    for col in cols:
        left = col in ("settings added", "same as")
        wraps = col == "settings added"  # folded, never cut: `weights_packing=true` was shown `tr…` at 80
        t.add_column(
            col,
            justify="left" if left else "right",
            no_wrap=not wraps,
            overflow="fold" if wraps else "ellipsis",
        )
    for i, st in enumerate(result):
        delta = st.delta_vs_reference
        t.add_row(
            str(i),
            st.label or "candidate's recipe",
            f"{st.size:,d}",
            f"{delta:+,d}",
            percent_text(delta, st.size - delta),
            f"{st.changed_vs_reference:,d}",
            f"{st.new:,d}",
            st.identical_to or "",
        )
    console.print(t)
    console.print(text(f"builds kept in {builds}"))
