"""bench/bench_requests.py end to end on 5,000 requests, so that
the benchmark cannot rot. Not a performance test: the figures are checked
to be there and plausible, not to be good."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RUN_TIMEOUT_S = 180


@pytest.mark.parametrize("api", ["produce", "fetch"])
def test_the_broker_cpu_per_request_is_measured(api):
    done = subprocess.run([sys.executable, "-m", "bench.bench_requests", "--api", api,
                           "--requests", "5000", "--rounds", "1"],
                          cwd=REPO, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    [(user_us, system_us)] = re.findall(r"round 0 B: broker user ([\d.]+) \+ system ([\d.]+) us per request",
                                        done.stdout)
    # Each request is at least decoded, handled and answered: some CPU,
    # and far below a millisecond on any machine this runs on.
    assert 0 < float(user_us) + float(system_us) < 5000
