"""Type stubs for kcore._native.append (native/append.pyx)."""

OVERLAP_BYTES: int

def append_batches(fd: int, buf: object, position: int,
                   check_count: bool = True) -> tuple[str, int, bool] | None: ...
