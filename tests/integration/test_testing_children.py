"""kcore.testing's brokers do not outlive a killed test process.

A process starts two brokers with kcore.testing.BrokerProcess, one from
its main thread and one from a worker thread that then ends, and is
SIGKILLed: no fixture teardown runs. The first broker stops by itself
(SIGTERM from the kernel, PR_SET_PDEATHSIG); the second, whose "parent"
to the kernel was the worker thread, was deliberately left unguarded and
still serves until stopped.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

from tests.support.processes import alive

PARENT = r'''
import sys, threading, time
from pathlib import Path
from kcore.testing import BrokerProcess

root = Path(sys.argv[1])
main = BrokerProcess(root / "main").start()
started = []
worker = threading.Thread(target=lambda: started.append(BrokerProcess(root / "worker").start()))
worker.start()
worker.join()
print(main.process.pid, main.port, started[0].process.pid, started[0].port, flush=True)
time.sleep(120)
'''
# Start-up is ~0.5 s a broker and a clean stop well under a second; 20 s
# bounds either on a loaded 2-core machine.
WAIT_S = 20.0


def wait_until_gone(pid: int) -> bool:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_a_killed_test_process_takes_its_main_thread_brokers_with_it(tmp_path):
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    main_pid = worker_pid = None
    try:
        main_pid, main_port, worker_pid, worker_port = (int(field) for field in parent.stdout.readline().split())
        assert alive(worker_pid), "a broker started from a worker thread stopped when the thread ended"
        parent.kill()
        parent.wait(WAIT_S)
        assert wait_until_gone(main_pid), "the broker outlived the process that started it"
        assert "stopped cleanly" in (tmp_path / f"broker-{main_port}.log").read_text(), "SIGTERM, not a kill"
        assert alive(worker_pid)
        socket.create_connection(("127.0.0.1", worker_port), timeout=5).close()
    finally:
        parent.kill()
        for pid in (main_pid, worker_pid):  # the first survives only when the test fails
            if pid is not None and alive(pid):
                os.killpg(pid, signal.SIGKILL)
