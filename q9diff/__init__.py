"""q9diff: forensics for Qualcomm QNN HTP context binaries.

The Python API (docs/python.md): open, diff, target, will_load, doctor and layers, each returning the frozen
result the command line prints from (`to_json()`, `to_html()`, `to_markdown()`, `show()`; a notebook
shows the HTML report inline), each failing with a `Q9Error` subclass, never SystemExit. What is public
is listed in `__all__` and versioned by `API_VERSION`; every other name may change.

`import q9diff` loads none of it: each name is imported when first used, so the command line and a
script that only reads one file pay for nothing else.
"""

from __future__ import annotations

import sys
import types
from importlib import import_module

__version__ = "0.1.0"
API_VERSION = 1  # raised when a public name, signature or result field of __all__ changes incompatibly

# name -> the module that defines it
_WHERE = {
    "open": "q9diff.api",
    "diff": "q9diff.api",
    "target": "q9diff.api",
    "will_load": "q9diff.api",
    "doctor": "q9diff.api",
    "layers": "q9diff.api",
    "Build": "q9diff.results",
    "DiffReport": "q9diff.results",
    "TargetReport": "q9diff.results",
    "LoadReport": "q9diff.results",
    "DoctorReport": "q9diff.results",
    "LayersReport": "q9diff.results",
    "Q9Error": "q9diff.errors",
    "InputError": "q9diff.errors",
    "FormatError": "q9diff.errors",
    "UnknownDevice": "q9diff.read.tables",
    "UnknownRuntime": "q9diff.load.runtime",
    "BundleError": "q9diff.genie.bundle",
}

__all__ = ["API_VERSION", "__version__", *_WHERE]


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'q9diff' has no attribute {name!r}")
    value = getattr(import_module(_WHERE[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """What `dir(q9diff)` and a REPL's completion offer: the public names and the module's own dunders,
    not the machinery above (the table of where names live, sys, import_module)."""
    return sorted(set(__all__) | {n for n in globals() if n.startswith("__") and n.endswith("__")})


class _Package(types.ModuleType):
    """q9diff's module type, for two names: `q9diff.doctor` and `q9diff.layers` are the API's functions, and
    stay them when their packages (q9diff/doctor/, q9diff/layers/) are imported, which the import system
    would otherwise record under the same names. The packages themselves are reached as every module is,
    by `from q9diff.doctor... import ...`."""

    @property
    def doctor(self):
        from q9diff.api import doctor  # start-up: api, construct

        return doctor

    @doctor.setter
    def doctor(self, package) -> None:  # the import system naming the subpackage: sys.modules keeps it
        pass

    @property
    def layers(self):
        from q9diff.api import layers  # start-up: api, construct

        return layers

    @layers.setter
    def layers(self, package) -> None:
        pass


sys.modules[__name__].__class__ = _Package
