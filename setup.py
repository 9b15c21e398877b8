"""Builds the Cython kernels in native/ into the kcore._native package.

KCORE_DEBUG=1 turns on Cython annotate (HTML next to each .pyx), line tracing
(for coverage and profilers) and a KCORE_DEBUG C macro; the default build is
-O2 with warnings on.
"""
import os
import platform
from pathlib import Path

from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("KCORE_DEBUG") == "1"
# Every native/<stem>.pyx becomes kcore._native.<stem>.
KERNELS = sorted(p.stem for p in Path("native").glob("*.pyx"))


def extension(stem: str) -> Extension:
    macros: list[tuple[str, str | None]] = []
    # SSE4.2 gives the crc32 instruction (~8 bytes per cycle); other CPUs
    # fall back to the table-driven CRC in native/crc32c.h.
    simd = ["-msse4.2"] if platform.machine() in ("x86_64", "AMD64") else []
    compile_args = ["-O2", "-Wall", "-Wno-unused-function", *simd]
    if DEBUG:
        macros += [("KCORE_DEBUG", "1"), ("CYTHON_TRACE_NOGIL", "1")]
        compile_args = ["-O0", "-g", "-Wall", *simd]
    return Extension(
        f"kcore._native.{stem}",
        [f"native/{stem}.pyx"],
        include_dirs=["native"],
        # A changed header rebuilds every kernel (they are few and small).
        depends=sorted(str(p) for p in Path("native").glob("*.h")),
        define_macros=macros,
        extra_compile_args=compile_args,
    )


setup(
    ext_modules=cythonize(
        [extension(stem) for stem in KERNELS],
        compiler_directives={
            "language_level": 3,
            "boundscheck": DEBUG,
            "wraparound": False,
            "cdivision": True,
            "linetrace": DEBUG,
            # No doctest hook (__test__) in the modules: they are not API,
            # and stubtest would have to be told to skip them.
            "autotestdict": False,
        },
        annotate=DEBUG,
    ),
)
