"""Builds of kcore that a bench run can start brokers from: this checkout,
or any git commit built on the side (``kcore bench compare``).

A commit is checked out in a throw-away git worktree and built one of two
ways (``MODES``):

- ``venv``: a virtualenv of its own and ``pip install`` of the checkout,
  which builds the Cython kernels into a wheel and installs the commit's
  own dependencies (pip's cache makes the second build of anything
  quick). What the commit's users would run.
- ``reuse-venv``: this interpreter and its installed dependencies, with
  the commit's ``kcore`` package first on ``sys.path``. Its kernels come
  from ``pip wheel --no-deps`` (build isolation, pip's cache), or, where
  the commit's ``native/`` and ``setup.py`` are byte for byte this
  checkout's and this checkout's kernels are built, are copied from here:
  the same sources give the same kernels, and the copy takes a second
  where the compile takes one to two minutes on two cores.

A build lives in ``<builds dir>/<commit>-<mode>/`` with a ``build.json``
written last; a later compare of the same commit reuses it (``rebuild``
makes it again). The worktree is removed as soon as the build is done.

Brokers of a build are started by ``Build.launcher()`` in isolated mode
(``python -I``): neither ``PYTHONPATH`` nor the working directory can put
another checkout's ``kcore`` in front of the build's.
"""
from __future__ import annotations

import dataclasses
import filecmp
import json
import shutil
import subprocess
import sys
import sysconfig
import time
import zipfile
from pathlib import Path

MODES = ("venv", "reuse-venv")
BUILD_TIMEOUT_S = 1800.0
GIT_TIMEOUT_S = 120.0
# Run kcore's command line with DIR first on sys.path: python -I -c BOOT DIR ARGS...
BOOT = "import sys; sys.path.insert(0, sys.argv.pop(1)); from kcore.cli.main import main; sys.exit(main())"
# Every kernel of the build imports (a build whose .so files do not load fails here, not in a round).
KERNEL_CHECK = ("import importlib, pkgutil, kcore, kcore._native as n; "
                "[importlib.import_module('kcore._native.' + m.name) for m in pkgutil.iter_modules(n.__path__)]; "
                "print(kcore.__version__)")
CHECKOUT_ROOT = Path(__file__).resolve().parents[2]


class BuildError(RuntimeError):
    pass


@dataclasses.dataclass(frozen=True)
class Build:
    """One kcore to start brokers from. ``site``: a directory put first on
    sys.path (its ``kcore`` wins); None: the interpreter's own kcore."""
    label: str
    ref: str
    commit: str
    python: str
    mode: str
    version: str
    site: Path | None = None

    def launcher(self) -> list[str]:
        """The argv that runs ``kcore ARGS`` from this build (append ARGS)."""
        if self.site is not None:
            return [self.python, "-I", "-u", "-c", BOOT, str(self.site)]
        if self.mode == "checkout":
            return [self.python, "-u", "-m", "kcore.cli.main"]
        return [self.python, "-I", "-u", "-m", "kcore.cli.main"]

    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        out["site"] = str(self.site) if self.site else None
        return out


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          timeout=GIT_TIMEOUT_S)
    if done.returncode != 0:
        raise BuildError(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout.strip()


def resolve(repo: Path, ref: str) -> str:
    """The full commit id ``ref`` names in ``repo``."""
    return git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")


def checkout(label: str = "B", source: Path | None = None) -> Build:
    """The kcore this harness imports (this checkout, uncommitted edits
    included), or a source tree with its kernels built in place
    (``source``, e.g. a ``git archive`` of one commit with a .revision)."""
    import kcore
    if source is not None:
        revision_file = source / ".revision"
        revision = revision_file.read_text().strip() if revision_file.exists() else "snapshot"
        return Build(label, revision, revision, sys.executable, "source", f"{kcore.__version__}+{revision}",
                     site=source)
    try:
        commit = git(CHECKOUT_ROOT, "rev-parse", "HEAD")
        dirty = bool(git(CHECKOUT_ROOT, "status", "--porcelain", "--untracked-files=no"))
    except (BuildError, OSError, subprocess.SubprocessError):
        commit, dirty = "unknown", False
    ref = "checkout" + (" (uncommitted changes)" if dirty else "")
    return Build(label, ref, commit, sys.executable, "checkout", f"{kcore.__version__}+{commit[:7]}")


def build(repo: Path, ref: str, label: str, builds_dir: Path, mode: str = "venv",
          rebuild: bool = False, say=print) -> Build:
    """Build ``ref`` of ``repo`` (or reuse the build of its commit)."""
    if mode not in MODES:
        raise BuildError(f"build mode {mode!r} is not one of {', '.join(MODES)}")
    try:
        commit = resolve(repo, ref)
    except BuildError as error:
        raise BuildError(f"{ref!r} names no commit in {repo}: {error}") from None
    home = builds_dir / f"{commit[:12]}-{mode}"
    marker = home / "build.json"
    if marker.is_file() and not rebuild:
        say(f"{label} = {ref} ({commit[:7]}): build reused from {home}")
        return _from_record(json.loads(marker.read_text()), label, ref)
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    say(f"{label} = {ref} ({commit[:7]}): building ({mode}) in {home}")
    start = time.monotonic()
    source = home / "src"
    git(repo, "worktree", "prune")
    git(repo, "worktree", "add", "--detach", "--quiet", str(source), commit)
    try:
        record = (_build_venv if mode == "venv" else _build_reuse)(source, home)
    finally:
        git(repo, "worktree", "remove", "--force", str(source))
    record.update(commit=commit, mode=mode, build_seconds=round(time.monotonic() - start, 1))
    record["version"] = f"{_check(record)}+{commit[:7]}"
    marker.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    say(f"{label} = {ref} ({commit[:7]}): built in {record['build_seconds']:.0f}s (kernels {record['kernels']})")
    return _from_record(record, label, ref)


def _from_record(record: dict, label: str, ref: str) -> Build:
    site = Path(record["site"]) if record.get("site") else None
    return Build(label, ref, record["commit"], record["python"], record["mode"], record["version"], site)


def _run(command: list[str], log: Path, cwd: Path | None = None) -> None:
    with open(log, "ab") as out:
        done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, cwd=cwd,
                              timeout=BUILD_TIMEOUT_S)
    if done.returncode != 0:
        tail = log.read_text(errors="replace")[-3000:]
        raise BuildError(f"{' '.join(command[:4])} ... exited with {done.returncode}:\n{tail}")


def _build_venv(source: Path, home: Path) -> dict:
    venv = home / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], home / "build.log")
    python = venv / "bin" / "python"
    _run([str(python), "-m", "pip", "install", "-q", str(source)], home / "build.log")
    return {"python": str(python), "site": None, "kernels": "built (pip install)"}


def _build_reuse(source: Path, home: Path) -> dict:
    site = home / "site"
    if _same_kernel_sources(source, CHECKOUT_ROOT):
        shutil.copytree(source / "kcore", site / "kcore")
        for built in _built_kernels(CHECKOUT_ROOT):
            shutil.copy2(built, site / "kcore" / "_native" / built.name)
        kernels = f"copied from {CHECKOUT_ROOT} (native/ and setup.py identical)"
    else:
        wheels = home / "wheel"
        _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(source)],
             home / "build.log")
        wheel = next(wheels.glob("kcore-*.whl"))
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(site)
        kernels = "built (pip wheel)"
    return {"python": sys.executable, "site": str(site), "kernels": kernels}


def _built_kernels(root: Path) -> list[Path]:
    return sorted((root / "kcore" / "_native").glob(f"*{sysconfig.get_config_var('EXT_SUFFIX')}"))


def _same_kernel_sources(source: Path, root: Path) -> bool:
    """The commit's kernel sources are this checkout's, and this checkout's
    kernels are built for this interpreter and newer than their sources."""
    if not (root / "native").is_dir() or not filecmp.cmp(source / "setup.py", root / "setup.py", shallow=False):
        return False
    theirs = sorted(p.name for p in (source / "native").iterdir() if p.is_file())
    ours = sorted(p.name for p in (root / "native").iterdir() if p.is_file() and p.suffix in (".pyx", ".h", ".pxd"))
    if [n for n in theirs if n.endswith((".pyx", ".h", ".pxd"))] != ours:
        return False
    if any(not filecmp.cmp(source / "native" / name, root / "native" / name, shallow=False) for name in ours):
        return False
    built = {p.name.split(".")[0]: p for p in _built_kernels(root)}
    stems = [name[:-4] for name in ours if name.endswith(".pyx")]
    newest_source = max((root / "native" / name).stat().st_mtime for name in ours)
    return all(stem in built and built[stem].stat().st_mtime >= newest_source for stem in stems)


def _check(record: dict) -> str:
    """Import every kernel of the build with its interpreter; its version."""
    prefix = [record["python"], "-I", "-c"]
    code = KERNEL_CHECK if not record.get("site") else \
        f"import sys; sys.path.insert(0, {record['site']!r}); " + KERNEL_CHECK
    done = subprocess.run([*prefix, code], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise BuildError(f"the build's kernels do not import: {done.stderr[-2000:]}")
    return done.stdout.strip()
