"""The documentation agrees with the code and with itself.

docs/apis.md is what its generator writes; every ``docs/...`` path named in
code, comments or documents exists, with the section it names; every
relative Markdown link resolves; every repository path the documents name
in backticks exists (a moved module shows up here); no file points to notes outside the
repository; the README's layout names every package; the error codes of
docs/protocol.md carry Kafka's numbers."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from kcore.cli import api_table
from kcore.protocol.errors import ErrorCode

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
SCANNED = ("kcore", "bench", "tests", "native", "docs", "perf_reports", "README.md", "Makefile",
           "setup.py", "pyproject.toml", "pyspark_kcore.py")
TEXT_SUFFIXES = {".py", ".pyx", ".pxd", ".pyi", ".h", ".md", ".toml", ".sh", ".txt", ".cfg", ".js",
                 ".html", ".css", ".properties", ""}
SKIPPED_DIRS = {"__pycache__", ".venv", "build", "test-artifacts", "node_modules"}
DOCS_REFERENCE = re.compile(r"\bdocs/([\w./-]+?\.md)(#[\w-]+)?")
MARKDOWN_LINK = re.compile(r"\]\(([^)\s]+)\)")
# Notes that live outside the repository, where readers of the code cannot
# follow them.
OUTSIDE_NOTES = re.compile(r"\b(ARCHITECTURE|PROTOCOL|PERF|STYLE|DEVICE)\.md\b|\.\./shared\b|/work/shared\b")


def text_files() -> list[Path]:
    files = []
    for name in SCANNED:
        path = ROOT / name
        candidates = [path] if path.is_file() else sorted(path.rglob("*"))
        for candidate in candidates:
            if (candidate.is_file() and candidate.suffix in TEXT_SUFFIXES
                    and not SKIPPED_DIRS.intersection(candidate.relative_to(ROOT).parts)):
                files.append(candidate)
    return files


def heading_anchors(markdown: Path) -> set[str]:
    """GitHub's anchors of a Markdown file's headings: lower case, only
    letters, digits, spaces, hyphens and underscores kept, spaces made
    hyphens."""
    anchors = set()
    in_code = False
    for line in markdown.read_text().splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and (match := re.match(r"#{1,6} (.+)", line)):
            anchors.add(re.sub(r"[^\w\- ]", "", match.group(1).strip().lower()).replace(" ", "-"))
    return anchors


def test_api_table_is_current():
    written = (DOCS / "apis.md").read_text()
    assert written == api_table.render(), (
        f"docs/apis.md differs from the code; regenerate it: {api_table.REGENERATE}")


def test_api_table_lists_every_served_api_with_its_range():
    written = (DOCS / "apis.md").read_text()
    for key, (low, high) in api_table.served_versions().items():
        versions = str(low) if low == high else f"{low}-{high}"
        assert re.search(rf"^\| {int(key)} \| \w+ \| {versions} \|", written, re.MULTILINE), key


def test_docs_paths_named_anywhere_exist_with_their_sections():
    missing = []
    for path in text_files():
        for match in DOCS_REFERENCE.finditer(path.read_text(errors="replace")):
            target = DOCS / match.group(1)
            anchor = match.group(2)
            if not target.is_file():
                missing.append(f"{path.relative_to(ROOT)}: docs/{match.group(1)}")
            elif anchor and anchor[1:] not in heading_anchors(target):
                missing.append(f"{path.relative_to(ROOT)}: docs/{match.group(1)}{anchor}")
    assert not missing, "references to missing docs or sections:\n" + "\n".join(missing)


@pytest.mark.parametrize("markdown", sorted([ROOT / "README.md", ROOT / "perf_reports" / "README.md",
                                             *DOCS.glob("*.md")]), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_markdown_links_resolve(markdown):
    broken = []
    for link in MARKDOWN_LINK.findall(markdown.read_text()):
        if re.match(r"[a-z]+:", link):
            continue  # http(s), mailto
        target, _, anchor = link.partition("#")
        resolved = (markdown.parent / target).resolve() if target else markdown
        if not resolved.exists():
            broken.append(link)
        elif anchor and (resolved.suffix != ".md" or anchor not in heading_anchors(resolved)):
            broken.append(link)
    assert not broken, f"{markdown.relative_to(ROOT)}: broken links {broken}"


def test_repository_paths_named_in_documents_exist():
    """`kcore/log/loader.py`, `server/connection.py` (under kcore/),
    `bench/bench_native.py`: paths whose first part is a top-level folder
    or a package of kcore. Paths in other projects' trees are not checked."""
    roots = {"kcore", "native", "bench", "tests", "docs", "perf_reports"}
    roots |= {path.name for path in (ROOT / "kcore").iterdir() if path.is_dir()}
    missing = []
    for markdown in [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]:
        for token in re.findall(r"`([\w.-]+/[\w./-]*)`", markdown.read_text()):
            if token.split("/")[0] in roots and not any(
                    candidate.exists() for candidate in (ROOT / token, ROOT / "kcore" / token)):
                missing.append(f"{markdown.relative_to(ROOT)}: {token}")
    assert not missing, "paths that do not exist:\n" + "\n".join(missing)


def test_no_file_points_to_notes_outside_the_repository():
    this_file = Path(__file__).resolve()
    found = [f"{path.relative_to(ROOT)}: {match.group(0)}"
             for path in text_files() if path.resolve() != this_file
             for match in OUTSIDE_NOTES.finditer(path.read_text(errors="replace"))]
    assert not found, "point these to docs/ instead:\n" + "\n".join(found)


def test_readme_layout_names_every_package():
    readme = (ROOT / "README.md").read_text()
    layout = readme[readme.index("## Layout"):]
    packages = sorted(init.parent.relative_to(ROOT) for init in (ROOT / "kcore").rglob("__init__.py"))
    missing = []
    for package in packages:
        if package == Path("kcore"):
            continue
        # A top-level package by its path, a nested one by its name in its parent's row.
        name = f"`{package.as_posix()}/`" if len(package.parts) == 2 else f"{package.name}/"
        if name not in layout:
            missing.append(package.as_posix())
    assert not missing, f"README.md's Layout table leaves out {missing}"


def test_protocol_error_codes_have_kafkas_numbers():
    protocol = (DOCS / "protocol.md").read_text()
    section = protocol[protocol.index("## Error codes"):]
    section = section[:section.index("\n## ", 1)]
    pairs = re.findall(r"(?<=\| )(-?\d+) \| ([A-Z_]+)(?= \|)", section)
    assert len(pairs) > 40
    wrong = [(code, name) for code, name in pairs
             if name not in ErrorCode.__members__ or ErrorCode[name] != int(code)]
    assert not wrong
