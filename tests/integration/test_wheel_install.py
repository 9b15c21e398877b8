"""The package as a user gets it: `python -m build` makes an sdist and,
from that sdist in a clean build environment, a wheel; the wheel goes into
a fresh virtualenv and serves a real client from there.

The virtualenv holds the wheel (installed by pip with --no-deps) and, as
symlinks, exactly the distributions its metadata requires, found in this
environment (the closure of Requires-Dist without extras): a runtime
import that the metadata leaves out fails here, and nothing is fetched.
Everything runs from a temporary directory with no PYTHONPATH, so the
source tree is never on sys.path; the broker's own memory map shows that
the compiled kernels it runs are the wheel's.
"""
from __future__ import annotations

import re
import subprocess
import sys
import tarfile
import time
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from kcore.testing import BrokerProcess
from tests.support.round_trip import round_trip

pytestmark = [pytest.mark.packaging, pytest.mark.timeout(900)]

REPO = Path(__file__).resolve().parents[2]
KERNELS = sorted(path.stem for path in (REPO / "native").glob("*.pyx"))
WORKLOADS = sorted(path.name for path in (REPO / "kcore" / "bench" / "workloads").glob("*.toml"))
BUILD_TIMEOUT_S = 600


def source_files() -> list[str]:
    """What a checkout holds: tracked files and new ones git does not ignore."""
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], capture_output=True, check=True, timeout=60)
    return [name for name in listed.stdout.decode().split("\0") if name and (REPO / name).is_file()]


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> dict[str, Path]:
    """{"sdist": ..., "wheel": ...}, built from a copy of the checkout (a
    build in the checkout itself would reuse its build/ and could ship
    modules deleted since)."""
    copy = tmp_path_factory.mktemp("source")
    for name in source_files():
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        (copy / name).write_bytes((REPO / name).read_bytes())
    out = tmp_path_factory.mktemp("dist")
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(copy)],
                          capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    print(f"python -m build: {time.monotonic() - started:.1f} s")
    (sdist,), (wheel,) = out.glob("*.tar.gz"), out.glob("*.whl")
    return {"sdist": sdist, "wheel": wheel}


def runtime_closure(requirements: list[str]) -> list[metadata.Distribution]:
    """The distributions of this environment that ``requirements`` (and
    theirs, recursively) need, extras left out."""
    found: dict[str, metadata.Distribution] = {}
    pending = [Requirement(text) for text in requirements]
    while pending:
        requirement = pending.pop()
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        name = canonicalize_name(requirement.name)
        if name in found:
            continue
        found[name] = distribution = metadata.distribution(requirement.name)
        pending += [Requirement(text) for text in distribution.requires or []]
    return list(found.values())


def link_distribution(distribution: metadata.Distribution, site_packages: Path) -> None:
    """Symlink every top-level entry of ``distribution`` into ``site_packages``."""
    root = Path(str(distribution.locate_file("")))
    tops = {Path(str(item)).parts[0] for item in distribution.files or [] if not str(item).startswith("..")}
    for top in sorted(tops):
        target = site_packages / top
        if (root / top).exists() and not target.exists():
            target.symlink_to(root / top)


@pytest.fixture(scope="module")
def venv(dist, tmp_path_factory) -> Path:
    """A fresh virtualenv with the wheel and its runtime dependencies only."""
    home = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(home)], check=True, timeout=120)
    python = home / "bin" / "python"
    site_packages = Path(subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True, timeout=60).stdout.strip())
    with zipfile.ZipFile(dist["wheel"]) as wheel:
        meta = next(name for name in wheel.namelist() if name.endswith(".dist-info/METADATA"))
        requirements = [line.split(":", 1)[1].strip() for line in wheel.read(meta).decode().splitlines()
                        if line.startswith("Requires-Dist:")]
    for dependency in runtime_closure(requirements):
        link_distribution(dependency, site_packages)
    pip = [sys.executable, "-m", "pip", "--python", str(python)]
    installed = subprocess.run([*pip, "install", "--no-deps", "--no-index", str(dist["wheel"])],
                               capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr[-3000:]
    checked = subprocess.run([*pip, "check"], capture_output=True, text=True, timeout=120)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    return home


@pytest.fixture
def outside(tmp_path, monkeypatch) -> Path:
    """Run from a directory that is not the checkout, without PYTHONPATH."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    return tmp_path


def test_sdist_holds_what_builds_the_kernels_and_no_generated_c(dist):
    with tarfile.open(dist["sdist"]) as sdist:
        names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    assert {f"native/{stem}.pyx" for stem in KERNELS} <= names
    assert {f"native/{header.name}" for header in (REPO / "native").glob("*.h")} <= names
    assert {"setup.py", "pyproject.toml", "MANIFEST.in", "pyspark_kcore.py"} <= names
    assert not [name for name in names if name.endswith((".c", ".so"))]


def test_wheel_holds_kernels_stubs_workloads_console_and_plugin(dist):
    with zipfile.ZipFile(dist["wheel"]) as wheel:
        names = set(wheel.namelist())
        entry_points = next(wheel.read(n).decode() for n in names if n.endswith("entry_points.txt"))
    for stem in KERNELS:
        assert any(re.fullmatch(rf"kcore/_native/{stem}\.cpython-.*\.so", name) for name in names), stem
        assert f"kcore/_native/{stem}.pyi" in names
    assert {f"kcore/bench/workloads/{name}" for name in WORKLOADS} <= names
    assert {"kcore/__main__.py", "kcore/testing/plugin.py", "kcore/console/static/index.html"} <= names
    assert not [name for name in names if name.startswith(("tests/", "bench/", "native/"))]
    assert re.search(r"\[pytest11\]\s*kcore = kcore\.testing\.plugin", entry_points)
    assert re.search(r"\[console_scripts\]\s*kcore = kcore\.cli\.main:main", entry_points)


def native_paths(pid: int) -> set[str]:
    """The kcore kernels (.so files) mapped into process ``pid``."""
    maps = Path(f"/proc/{pid}/maps").read_text()
    return {line.split()[-1] for line in maps.splitlines() if "/kcore/_native/" in line}


@pytest.mark.parametrize("launcher", ["bin/kcore", "bin/python -m kcore"])
def test_installed_wheel_runs_a_broker_on_its_own_kernels(venv, outside, launcher):
    argv = launcher.split()
    broker = BrokerProcess(outside / "data", {"http.listeners": ""},
                           launcher=[str(venv / argv[0]), *argv[1:]])
    with broker:
        assert round_trip(broker.bootstrap_servers, "wheel", b"from the wheel") == b"from the wheel"
        mapped = native_paths(broker.process.pid)
    site_packages = str(venv / "lib")
    assert {Path(path).name.split(".")[0] for path in mapped} == set(KERNELS), mapped
    assert all(path.startswith(site_packages) for path in mapped), mapped


def test_installed_kcore_bench_lists_the_packaged_workloads(venv, outside):
    done = subprocess.run([str(venv / "bin" / "kcore"), "bench", "workloads"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    listed = {line.split()[0] for line in done.stdout.splitlines() if line.strip()}
    assert listed == {name.removesuffix(".toml") for name in WORKLOADS}
