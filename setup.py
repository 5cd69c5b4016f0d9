"""The one compiled part: q9diff.compare._scan, the scan's fused pass (see its source). Optional: where no C
compiler or Python headers are found the build goes on without it and the scan takes its numpy passes,
with the same answers, slower."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "q9diff.compare._scan", ["q9diff/compare/_scan.c"], extra_compile_args=["-O3"], optional=True
        )
    ]
)
