"""The house in layers (issue 18): no import cycle among q9diff's modules, nor (issue 46) among its packages
(imports inside functions counted, since they hide a cycle rather than break it), no module over 500
lines, every module importable from the checkout, and (issue 39) no private name of one module used by
another: an underscore name imported elsewhere is a public name in disguise. The byte layouts in formats/
are the one folder an install maps into the package (issue 37: installed, they are q9diff.formats)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "q9diff"
FORMATS = ROOT / "formats"  # installed as q9diff.formats (pyproject.toml, package-dir)


def _modules() -> dict[str, Path]:
    out = {}
    for folder, name in ((PACKAGE, "q9diff"), (FORMATS, "q9diff.formats")):
        for p in folder.rglob("*.py"):
            parts = [name, *p.relative_to(folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = p
    return out


def _imports(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Every q9diff module `module` imports, anywhere in its body; importing a.b.c also runs a and a.b."""
    found: set[str] = set()
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text())):
        targets: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.level:  # relative: from the module's own package
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            node = ast.ImportFrom(f"{base}.{node.module}" if node.module else base, node.names, 0)
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.level == 0
            and node.module.startswith("q9diff")
        ):
            targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                       for a in node.names]  # fmt: skip
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names if a.name.startswith("q9diff")]
        for t in targets:
            parts = t.split(".")
            # Importing a.b.c runs a.b; the root package too, but it imports nothing when it runs (the API's
            # names load on first use: test_import_q9diff_loads_nothing_else), so no module depends on it.
            found |= {".".join(parts[:i]) for i in range(2, len(parts) + 1)} & set(modules)
    found.discard(module)
    return found


def test_no_import_cycle_among_q9diffs_modules():
    modules = _modules()
    graph = {m: _imports(m, p, modules) for m, p in modules.items()}
    cycles = _cycles(graph)
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The cycles a depth-first search closes in `graph`, each as the path that closes it."""
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 1:
                cycles.append(stack[stack.index(n) :] + [n])
            elif n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    return cycles


def _package(module: str) -> str:
    """The room a module stands in at the package's first level: q9diff.compare for q9diff.compare.diff,
    a top-level module (q9diff.inputs) its own."""
    return ".".join(module.split(".")[:2])


def test_no_import_cycle_among_q9diffs_packages():
    # Packages import one another one way: fix and recipes each importing the other (issue 46), or doctor a
    # presenter whose package imports doctor, is a circle of packages even where no two modules form one.
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for m, p in modules.items():
        found = {_package(n) for n in _imports(m, p, modules)} - {_package(m)}
        graph.setdefault(_package(m), set()).update(found)
    assert not _cycles(graph), "\n".join(" -> ".join(c) for c in _cycles(graph))


def test_no_module_over_500_lines():
    sizes = {m: len(p.read_text().splitlines()) for m, p in _modules().items()}
    assert {m: n for m, n in sizes.items() if n > 500} == {}


def test_every_module_imports_from_the_checkout_as_an_isolated_child_does():
    # -I: no PYTHONPATH, no user site, no working directory; only the checkout put first on the path, as
    # q9diff.guard starts its children. q9diff's modules must come from the files here, so an installed copy
    # cannot stand in for them; q9diff.formats comes through the install's mapping of formats/ (this folder
    # itself in an editable install, a copy of it otherwise), so its files must be this checkout's.
    modules = _modules()
    names = sorted(m for m in modules if not m.endswith("__main__"))
    code = (
        "import importlib, json, sys; sys.path.insert(0, sys.argv[1])\n"
        "print(json.dumps({name: importlib.import_module(name).__file__ for name in sys.argv[2:]}))"
    )
    argv = [sys.executable, "-I", "-c", code, str(ROOT), *names]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd="/")
    assert done.returncode == 0, done.stderr
    files = json.loads(done.stdout)
    bad = [n for n in names if not n.startswith("q9diff.formats") and not files[n].startswith(str(ROOT))]
    bad += [
        n
        for n in names
        if n.startswith("q9diff.formats") and Path(files[n]).read_bytes() != modules[n].read_bytes()
    ]
    assert bad == []
    assert any(n.startswith("q9diff.formats.") for n in names)


def test_import_q9diff_loads_nothing_else():
    # The root package is the API's front: its names load when first used, so `import q9diff` (and every
    # module of q9diff, which runs it) costs no other module, no numpy, rich, typer or plotly.
    heavy = ("q9diff.", "numpy", "rich", "typer", "plotly")
    code = f"import sys, q9diff; print(sorted(m for m in sys.modules if m.startswith({heavy!r})))"
    argv = [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r}); {code}"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd="/")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def _private_uses(path: Path, module: str, modules: dict[str, Path], attributes: bool) -> list[str]:
    """`from q9diff.x import _name` in `path` (and, with `attributes`, `x._name` of a q9diff module it
    imported). What a package keeps private for its own modules (the compiled q9diff.compare._scan, which
    q9diff.compare.blocks imports) stays theirs."""
    tree = ast.parse(path.read_text())
    package = module.rsplit(".", 1)[0]
    aliases: dict[str, str] = {}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("q9diff"):
            for a in node.names:
                if f"{node.module}.{a.name}" in modules:
                    aliases[a.asname or a.name] = f"{node.module}.{a.name}"
                private = a.name.startswith("_") and not a.name.startswith("__")
                own = node.module == package
                if private and not own and node.module != module:
                    out.append(f"{path.relative_to(ROOT)}:{node.lineno}: from {node.module} import {a.name}")
        elif isinstance(node, ast.Import):
            aliases |= {a.asname: a.name for a in node.names if a.asname and a.name.startswith("q9diff")}
    if attributes:
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and aliases.get(node.value.id, module) != module
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                out.append(f"{path.relative_to(ROOT)}:{node.lineno}: {aliases[node.value.id]}.{node.attr}")
    return out


def test_no_module_uses_another_modules_private_names():
    modules = _modules()
    found = [x for m, p in modules.items() for x in _private_uses(p, m, modules, attributes=True)]
    assert found == []


def test_tests_import_no_private_name_of_q9diff():
    # Tests use q9diff as its users do, through public names; a test may still reach into the module it
    # tests to stand a part in (monkeypatch.setattr(blocks, "FUSED", ...)), so only imports count here.
    modules = _modules()
    found = [
        x
        for p in sorted((ROOT / "tests").glob("*.py"))
        for x in _private_uses(p, f"tests.{p.stem}", modules, False)
    ]
    assert found == []


def test_a_checkout_never_installed_is_told_so_in_one_line(fixtures_dir):
    # Without the install's mapping of formats/ (here: the editable install's finder taken away, so the
    # checkout is a source tree run in place), a command says what is missing and how to install.
    code = (
        "import sys; sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f).lower()]\n"
        "sys.path.insert(0, sys.argv[1]); sys.argv = ['q9diff', 'inspect', sys.argv[2]]\n"
        "from q9diff.cli import main; main()"
    )
    part = next(fixtures_dir.rglob("part_1_of_2.bin"))
    done = subprocess.run(
        [sys.executable, "-I", "-c", code, str(ROOT), str(part)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "never installed; run `pip install -e .`" in done.stderr
