"""A data dir the broker cannot use stops it at start-up with exit code 2
and one sentence naming the directory and the reason, before it listens;
a missing one that can be created is created (as Kafka does)."""
from __future__ import annotations

import subprocess

import pytest

from tests.support import BrokerProcess
from tests.support.cli import kcore_cli
from tests.support.tmpfs import mounted_tmpfs


def start_broker(data_dir) -> subprocess.CompletedProcess:
    return kcore_cli("broker", "--override", f"log.dirs={data_dir}",
                     "--override", "listeners=PLAINTEXT://127.0.0.1:0")


@pytest.fixture
def read_only_fs(tmp_path):
    with mounted_tmpfs(tmp_path / "ro", "1m", read_only=True) as path:
        yield path


def test_unwritable_data_dir_is_refused_with_its_reason(read_only_fs):
    done = start_broker(read_only_fs)
    assert done.returncode == 2
    assert done.stderr.strip().endswith(f"log.dirs: {read_only_fs} is not writable by this user")
    assert "Traceback" not in done.stderr


def test_missing_data_dir_that_cannot_be_created_is_refused(read_only_fs):
    done = start_broker(read_only_fs / "missing")
    assert done.returncode == 2
    assert f"cannot create {read_only_fs / 'missing'}: Read-only file system" in done.stderr
    assert "Traceback" not in done.stderr


def test_data_dir_under_a_regular_file_is_refused(tmp_path):
    (tmp_path / "file").write_text("not a directory")
    done = start_broker(tmp_path / "file" / "data")
    assert done.returncode == 2
    assert "Not a directory" in done.stderr and str(tmp_path / "file" / "data") in done.stderr


def test_missing_data_dir_is_created(tmp_path):
    (tmp_path / "data").mkdir()
    broker = BrokerProcess(tmp_path / "data" / "new").start()  # its log goes to tmp_path/data
    try:
        assert (tmp_path / "data" / "new").is_dir()
    finally:
        broker.kill()
