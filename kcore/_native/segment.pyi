"""Type stubs for kcore._native.segment (native/segment.pyx)."""

def scan_segment(
    fd: int, base_offset: int, end_position: int, index_interval_bytes: int = 4096,
    start_position: int = 0, max_timestamp: int = -1, offset_of_max_timestamp: int = -1,
    last_time_index_timestamp: int = -1,
) -> tuple[int, int, int, int, int, bytes, bytes, str | None]:
    """(valid_end_position, next_offset, max_timestamp, offset_of_max_timestamp,
    batches, index_entries, time_index_entries, stop_reason)"""

def find_batch(
    fd: int, start_position: int, end_position: int, target_offset: int,
    expected_last_offset: int = -1,
) -> tuple[int, int, int, int] | None:
    """(position, size, base_offset, last_offset)"""

def find_timestamp(
    fd: int, start_position: int, end_position: int, target_timestamp: int, min_offset: int = -1
) -> tuple[int, int, int, int, int] | None:
    """(position, size, base_offset, last_offset, max_timestamp)"""

def read_extent(
    fd: int,
    start_position: int,
    walk_position: int,
    end_position: int,
    max_bytes: int,
    max_offset: int = -1,
    min_one_batch: bool = True,
    stop_when_uncached: bool = False,
) -> int: ...
def walk_headers(
    fd: int, start_position: int, end_position: int
) -> tuple[int, int, int, int, int]:
    """(end_of_whole_batches, batches, next_offset, max_timestamp, offset_of_max_timestamp)"""

def batch_headers(
    fd: int, start_position: int, end_position: int, max_batches: int = -1
) -> tuple[list[tuple[int, bytes]], int]: ...
