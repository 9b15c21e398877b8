"""What the harness measures besides the clients' own figures: broker CPU
and RSS from /proc (psutil), the machine, page-cache dropping for cold
reads, and log sizes on disk."""
from __future__ import annotations

import os
import platform
import threading
from pathlib import Path

import psutil

# RSS is sampled every 100 ms: a peak shorter than that can be missed, so
# the kernel's own high-water mark (VmHWM) is reported beside it.
SAMPLE_INTERVAL_S = 0.1


class BrokerSampler:
    """CPU seconds at checkpoints and the peak RSS of a broker, sampled on a
    daemon thread: the process and every process under it, so a node of
    several broker processes (num.processes) counts whole, and every broker
    of a cluster (several pids), summed. Concurrency contract: the thread
    only raises ``peak_rss``; ``cpu_seconds`` and ``close`` are called by
    the owner."""

    def __init__(self, pids: int | list[int]):
        self.processes = [psutil.Process(pid) for pid in ([pids] if isinstance(pids, int) else pids)]
        self.peak_rss = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _tree(self) -> list[psutil.Process]:
        tree = []
        for process in self.processes:
            tree.append(process)
            try:
                tree += process.children(recursive=True)
            except psutil.Error:
                pass
        return tree

    def _sample(self) -> None:
        while not self._stop.is_set():
            try:
                rss = sum(p.memory_info().rss for p in self._tree())
                self.peak_rss = max(self.peak_rss, rss)
            except psutil.Error:
                if not any(process.is_running() for process in self.processes):
                    return
            self._stop.wait(SAMPLE_INTERVAL_S)

    def cpu_seconds(self) -> float:
        total = 0.0
        for process in self._tree():
            try:
                times = process.cpu_times()
            except psutil.Error:
                continue  # exited between the listing and the read
            total += times.user + times.system
        return total

    def rss_hwm_bytes(self) -> int:
        """The kernel's RSS high-water marks (VmHWM) of the measured pids, summed."""
        total = 0
        for process in self.processes:
            try:
                for line in Path(f"/proc/{process.pid}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        total += int(line.split()[1]) * 1024
            except OSError:
                pass
        return total

    def close(self) -> None:
        self._stop.set()
        self._thread.join(1)


def native_dirs(pids: list[int]) -> list[str]:
    """The directories of the kcore kernels (.so files) mapped into these
    processes: which build's kernels a broker runs on."""
    found: set[str] = set()
    for pid in pids:
        try:
            maps = Path(f"/proc/{pid}/maps").read_text()
        except OSError:
            continue
        found.update(str(Path(line.split()[-1]).parent) for line in maps.splitlines()
                     if "/kcore/_native/" in line and ".so" in line)
    return sorted(found)


def machine() -> dict:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"hostname": platform.node(), "cpu_model": model, "cpus": os.cpu_count(),
            "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
            "kernel": platform.release(), "python": platform.python_version()}


def load_average() -> float:
    return round(os.getloadavg()[0], 2)


def drop_page_cache(directory: Path) -> int:
    """Write back, then drop from the page cache, every file under
    ``directory`` (posix_fadvise DONTNEED drops clean pages only, hence
    the fsync first). Returns the bytes dropped."""
    dropped = 0
    for path in directory.rglob("*"):
        if not path.is_file():
            continue
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            dropped += os.fstat(fd).st_size
        finally:
            os.close(fd)
    return dropped


def cached_fraction(directory: Path) -> float | None:
    """Share of the bytes under ``directory`` resident in the page cache
    (mincore over a read-only mapping), to show a cold read is cold."""
    import mmap
    total = resident = 0
    page = mmap.PAGESIZE
    for path in directory.rglob("*.log"):
        size = path.stat().st_size
        if size == 0:
            continue
        # A private (copy-on-write) mapping is writable for ctypes and, never
        # written, shows the file's page-cache pages.
        with open(path, "rb") as handle, mmap.mmap(handle.fileno(), size, access=mmap.ACCESS_COPY) as mapped:
            resident += _resident_pages(mapped, size, page) * page
        total += size
    return min(1.0, resident / total) if total else None


def _resident_pages(mapped, size: int, page: int) -> int:
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    pages = (size + page - 1) // page
    vector = (ctypes.c_ubyte * pages)()
    start = ctypes.c_char.from_buffer(mapped)
    try:
        if libc.mincore(ctypes.c_void_p(ctypes.addressof(start)), ctypes.c_size_t(size), vector) != 0:
            return 0
    finally:
        del start
    return sum(1 for flag in vector if flag & 1)


def log_bytes(data_dir: Path | None, topic: str) -> int | None:
    """Bytes of the topic's segment files (what the broker stored)."""
    if data_dir is None or not data_dir.is_dir():
        return None
    return sum(path.stat().st_size for path in data_dir.glob(f"{topic}-*/*.log"))

