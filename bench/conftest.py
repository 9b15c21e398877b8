"""Micro-benchmarks of the native kernels and the partition log.

Run: ``.venv/bin/python -m pytest bench --benchmark-enable`` (add
``--benchmark-json=FILE`` to keep the figures). Files are named
``bench_*.py``; this conftest collects them. Ratios measured against a
baseline in the same run (interleaved, medians) are printed at the end of
the session and stored in each benchmark's ``extra_info``.
"""
from __future__ import annotations

import statistics
import time

import pytest

_RATIOS: list[str] = []


def pytest_collect_file(file_path, parent):
    # Files named on the command line are collected by pytest itself.
    if file_path.suffix == ".py" and file_path.name.startswith("bench_") \
            and not parent.session.isinitpath(file_path):
        return pytest.Module.from_parent(parent, path=file_path)
    return None


def pytest_terminal_summary(terminalreporter):
    if _RATIOS:
        terminalreporter.section("kcore ratios (same run, interleaved, medians)")
        for line in _RATIOS:
            terminalreporter.write_line(line)


@pytest.fixture
def report(benchmark):
    """report(name, **figures): store figures in extra_info and print them."""

    def record(name: str, **figures) -> None:
        benchmark.extra_info.update(figures)
        _RATIOS.append(f"{name}: " + ", ".join(
            f"{key}={value:.3g}" if isinstance(value, float) else f"{key}={value}"
            for key, value in figures.items()))

    return record


@pytest.fixture
def measure():
    """Timing helpers: measure.interleaved(a, b), measure.best_time(f)."""

    class Measure:
        pass

    helpers = Measure()
    helpers.interleaved = interleaved
    helpers.best_time = best_time
    return helpers


def interleaved(first, second, rounds: int = 9, self_timed: bool = False) -> tuple[float, float]:
    """Median wall times of two callables run A B, B A, A B ... so drift
    and page-cache state hit both alike. ``self_timed``: each callable
    returns the seconds of the part being compared (set-up and clean-up
    left out) instead of being timed whole."""
    times_a, times_b = [], []
    for i in range(rounds):
        pair = ((first, times_a), (second, times_b))
        for action, sink in (pair if i % 2 == 0 else pair[::-1]):
            start = time.perf_counter()
            result = action()
            sink.append(result if self_timed else time.perf_counter() - start)
    return statistics.median(times_a), statistics.median(times_b)


def best_time(action, repeat: int = 5, number: int = 1) -> float:
    """Smallest mean time per call over ``repeat`` runs of ``number`` calls."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            action()
        best = min(best, (time.perf_counter() - start) / number)
    return best
