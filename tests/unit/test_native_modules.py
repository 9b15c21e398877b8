"""The kernels in use are the compiled extensions, never a silent fallback."""
import importlib
import importlib.machinery
from pathlib import Path

import pytest

# Every native/<stem>.pyx, so a new kernel is covered without editing this.
COMPILED = sorted(p.stem for p in (Path(__file__).parents[2] / "native").glob("*.pyx"))


@pytest.mark.parametrize("stem", COMPILED)
def test_native_module_is_a_compiled_extension(stem):
    module = importlib.import_module(f"kcore._native.{stem}")
    assert module.__file__.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))
    assert module.__file__.endswith(".so")
    assert isinstance(module.__loader__, importlib.machinery.ExtensionFileLoader)


def test_crc32c_uses_the_hardware_instruction_on_x86_64():
    import platform

    from kcore._native import records

    if platform.machine() != "x86_64":
        pytest.skip("the SSE4.2 path exists only on x86_64")
    assert records.CRC32C_HARDWARE is True
    flags = next((line for line in open("/proc/cpuinfo") if line.startswith("flags")), "").split()
    folding = {"vpclmulqdq", "avx512f", "avx512bw", "avx512vl"} <= set(flags)
    assert records.CRC32C_IMPLEMENTATION == ("vpclmulqdq" if folding else "sse4.2")


def test_batch_h_offsets_are_the_python_layout():
    """native/batch.h and kcore/_native/batch_layout.py state one layout:
    every number batch.h defines under a Kafka name has the same value
    in Python."""
    import re

    from kcore._native import batch_layout

    header = (Path(__file__).parents[2] / "native" / "batch.h").read_text()
    defines = dict(re.findall(r"^#define KC_(\w+) (0x[0-9a-fA-F]+|\d+)", header, re.M))
    assert len(defines) >= 17
    for name, value in defines.items():
        assert getattr(batch_layout, name) == int(value, 0), name


def test_async_unit_tests_run_on_uvloop():
    import asyncio

    import uvloop

    async def loop_type():
        return type(asyncio.get_running_loop())

    assert asyncio.run(loop_type()) is uvloop.Loop
