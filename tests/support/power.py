"""A disk whose power a test can cut: ext4 on a loop device backed by a
sparse file in the test's directory.

``cut()`` shuts the filesystem down as a power failure leaves it:
EXT4_IOC_SHUTDOWN with EXT4_GOING_FLAGS_NOLOGFLUSH (linux/fs/ext4/ext4.h)
writes nothing more, so every dirty page in the page cache and the
journal's running transaction are lost, and every later read or write
fails with EIO. What fsync / fdatasync had made durable is in the backing
file (the loop device's disk), and ``remount()`` replays its journal as
the mount after a reboot would. A SIGKILL keeps the page cache; this
does not, so only a broker that syncs before it acknowledges keeps
every acknowledged message through it.

The disk is mounted under a shared bind mount of its own: a mount
namespace created meanwhile (``ip netns exec`` makes one per command)
gets a copy of the disk's mount, and only a shared mount's unmount
reaches that copy; a private copy would keep the shut-down filesystem,
and its loop device, alive after the test unmounted it.

Device-mapper (dm-flakey's drop_writes) would do the same below the
filesystem, but the kernels these tests run on are built without it;
loop devices and ext4 are there. Needs root (mount, losetup, mkfs.ext4
from e2fsprogs: Makefile system-deps); the tests skip without it.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import struct
import subprocess
import time
from pathlib import Path

import pytest

# _IOR('X', 125, __u32): the same number as XFS_IOC_GOINGDOWN.
EXT4_IOC_SHUTDOWN = 0x8004587D
# Neither the journal nor the page cache is written out.
EXT4_GOING_FLAGS_NOLOGFLUSH = 0x2
# How long the old filesystem may take to let go of its loop device after
# the unmount (a killed process's io_uring is torn down after the process
# is reaped).
RELEASE_TIMEOUT_S = 20.0


class PowerCutDisk:
    """``size_mb`` of ext4 mounted at ``directory``/disk (``mount_point``);
    a context manager."""

    def __init__(self, directory: Path, size_mb: int = 512):
        self.shared = directory
        self.image = directory.parent / f"{directory.name}.img"
        self.mount_point = directory / "disk"
        self.size_mb = size_mb
        self.cuts = 0

    def __enter__(self) -> PowerCutDisk:
        if os.geteuid() != 0:
            pytest.skip("cutting a disk's power needs root (mount, loop devices)")
        if shutil.which("mkfs.ext4") is None:
            pytest.skip("mkfs.ext4 (e2fsprogs) is not installed: make system-deps")
        with open(self.image, "wb") as image:
            image.truncate(self.size_mb << 20)
        _run("mkfs.ext4", "-q", "-F", str(self.image))
        self.shared.mkdir(parents=True, exist_ok=True)
        _run("mount", "--bind", str(self.shared), str(self.shared))
        _run("mount", "--make-shared", str(self.shared))
        self.mount_point.mkdir()
        self._mount()
        return self

    def __exit__(self, *exc_info) -> None:
        # Lazy: a process the test failed to stop may still hold a file;
        # the loop device goes once it lets go.
        for mounted in (self.mount_point, self.shared):
            subprocess.run(["umount", "-l", str(mounted)], capture_output=True)
        self.image.unlink(missing_ok=True)

    def cut(self) -> None:
        """The power fails: nothing not yet synced reaches the disk."""
        fd = os.open(self.mount_point, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.ioctl(fd, EXT4_IOC_SHUTDOWN, struct.pack("I", EXT4_GOING_FLAGS_NOLOGFLUSH))
        finally:
            os.close(fd)
        self.cuts += 1

    def remount(self) -> None:
        """Power back: unmount the dead filesystem, mount the disk again
        (journal replay). Every process that had files open on it must be
        gone. The old filesystem must be gone too before the new mount, or
        mount would reuse its loop device and find it still shut down."""
        deadline = time.monotonic() + RELEASE_TIMEOUT_S
        while True:
            done = subprocess.run(["umount", str(self.mount_point)], capture_output=True, text=True)
            if done.returncode == 0:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"umount {self.mount_point}: {done.stderr.strip()}")
            time.sleep(0.05)
        while self._loop_devices():
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.image} still on {self._loop_devices()} after umount")
            time.sleep(0.05)
        self._mount()

    def _loop_devices(self) -> str:
        return subprocess.run(["losetup", "-j", str(self.image)], capture_output=True,
                              text=True, timeout=30).stdout.strip()

    def _mount(self) -> None:
        # Under the shared bind mount, so shared too (see module doc).
        _run("mount", "-o", "loop", str(self.image), str(self.mount_point))


def _run(*command: str) -> None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()}")
