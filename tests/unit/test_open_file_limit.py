"""The broker's open-file limit: raised to the hard limit, and a warning
that names the numbers when the logs leave too little room."""
from __future__ import annotations

import resource
import subprocess
import sys

from kcore.log.log import Log
from kcore.server.limits import CONNECTION_ROOM, check_open_file_room


def test_the_soft_limit_is_raised_to_the_hard_limit():
    code = ("import resource; from kcore.server.limits import raise_open_file_limit; "
            "soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE); "
            "resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard)); "
            "print(raise_open_file_limit() == hard == resource.getrlimit(resource.RLIMIT_NOFILE)[0])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "True"


def test_a_limit_too_low_for_the_segments_is_a_warning_naming_them(tmp_path, caplog):
    logs = [Log.open(tmp_path / f"t-{i}") for i in range(3)]
    try:
        assert check_open_file_room(3 + 3 + CONNECTION_ROOM, logs) is None
        warning = check_open_file_room(1024, logs)
        assert warning is not None and "1024" in warning and "3 partitions" in warning
        assert warning in caplog.text
        assert check_open_file_room(resource.RLIM_INFINITY, logs) is None
    finally:
        for item in logs:
            item.close()
