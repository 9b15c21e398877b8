"""Type stubs for kcore._native.append (native/append.pyx)."""
from typing_extensions import Buffer

OVERLAP_BYTES: int

def append_batches(fd: int, buf: Buffer, position: int,
                   check_count: bool = True) -> tuple[str, int, bool] | None: ...
def reserve_space(fd: int, position: int, length: int) -> int: ...
