"""The stubs under type checkers: tests/typing/pass_*.py check cleanly, and each
tests/typing/fail_*.py has errors exactly on its line marked ``# expect-error``.

mypy (--strict) and pyright (strict mode) each run once over the whole folder; their
reports are split per file. A checker that is not installed in this environment skips
its tests with the reason.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TYPING = ROOT / "tests" / "typing"
README = ROOT / "README.md"
MARK = "# expect-error"

PASS = sorted(TYPING.glob("pass_*.py"))
FAIL = sorted(TYPING.glob("fail_*.py"))
SNIPPETS = PASS + FAIL


@dataclass
class Report:
    """Error lines per snippet file name, and the messages for failure output."""

    lines: dict[str, set[int]] = field(default_factory=dict)
    messages: dict[str, list[str]] = field(default_factory=dict)
    elsewhere: list[str] = field(default_factory=list)

    def add(self, path: str, line: int, message: str) -> None:
        p = Path(path)
        p = (p if p.is_absolute() else ROOT / p).resolve()
        if p.parent != TYPING.resolve():
            self.elsewhere.append(f"{path}:{line}: {message}")
            return
        self.lines.setdefault(p.name, set()).add(line)
        self.messages.setdefault(p.name, []).append(f"{line}: {message}")


def expected_lines(path: Path) -> set[int]:
    return {
        n for n, text in enumerate(path.read_text().splitlines(), 1) if MARK in text
    }


@functools.cache
def run_mypy() -> Report | str:
    """mypy --strict over every snippet; a str is the reason it could not run."""
    if importlib.util.find_spec("mypy") is None:
        return f"mypy is not installed for {sys.executable}"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--output",
            "json",
            "--no-error-summary",
            "--cache-dir",
            str(ROOT / ".mypy_cache"),
            *map(str, SNIPPETS),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode not in (0, 1):
        pytest.fail(f"mypy crashed (exit {proc.returncode}):\n{proc.stderr}")
    report = Report()
    for line in proc.stdout.splitlines():
        if not line.startswith("{"):
            continue
        d = json.loads(line)
        if d["severity"] == "error":
            report.add(d["file"], d["line"], f"{d['message']} [{d['code']}]")
    return report


@functools.cache
def run_pyright(tmp: Path) -> Report | str:
    """pyright (strict mode) over every snippet; a str is the reason it could not
    run."""
    exe = Path(sys.executable).parent / "pyright"
    if not exe.exists():
        return f"pyright is not installed next to {sys.executable}"
    config = tmp / "pyrightconfig.json"
    config.write_text(json.dumps({"typeCheckingMode": "strict"}))
    proc = subprocess.run(
        [
            str(exe),
            "--outputjson",
            "--project",
            str(config),
            "--pythonpath",
            sys.executable,
            *map(str, SNIPPETS),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYRIGHT_PYTHON_IGNORE_WARNINGS": "1"},
    )
    start = proc.stdout.find("{")
    if start < 0:
        # The pip wrapper could not start pyright (e.g. no Node.js to be had).
        return f"pyright did not run (exit {proc.returncode}): {proc.stderr[-500:]}"
    out = json.loads(proc.stdout[start:])
    report = Report()
    for d in out["generalDiagnostics"]:
        if d["severity"] == "error":
            line = d["range"]["start"]["line"] + 1
            report.add(d["file"], line, f"{d['message']} [{d.get('rule', '')}]")
    return report


@pytest.fixture(scope="module")
def mypy_report() -> Report:
    report = run_mypy()
    if isinstance(report, str):
        pytest.skip(report)
    return report


@pytest.fixture(scope="module")
def pyright_report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    report = run_pyright(tmp_path_factory.mktemp("pyright"))
    if isinstance(report, str):
        pytest.skip(report)
    return report


def check(report: Report, snippet: Path, checker: str) -> None:
    got = report.lines.get(snippet.name, set())
    want = expected_lines(snippet)
    messages = "\n".join(report.messages.get(snippet.name, [])) or "(none)"
    assert got == want, (
        f"{checker} reports errors on lines {sorted(got)} of {snippet.name}, "
        f"expected exactly {sorted(want)}:\n{messages}"
    )


def test_snippets_are_annotated() -> None:
    assert PASS and FAIL, f"no snippets in {TYPING}"
    for snippet in PASS:
        assert not expected_lines(snippet), f"{snippet.name} must not expect errors"
    for snippet in FAIL:
        n = len(expected_lines(snippet))
        assert n == 1, f"{snippet.name} marks {n} lines with {MARK!r}, expected 1"


@pytest.mark.parametrize("snippet", SNIPPETS, ids=lambda p: p.stem)
def test_mypy(snippet: Path, mypy_report: Report) -> None:
    check(mypy_report, snippet, "mypy --strict")


@pytest.mark.parametrize("snippet", SNIPPETS, ids=lambda p: p.stem)
def test_pyright(snippet: Path, pyright_report: Report) -> None:
    check(pyright_report, snippet, "pyright (strict)")


def test_no_errors_outside_the_snippets(
    mypy_report: Report, pyright_report: Report
) -> None:
    elsewhere = mypy_report.elsewhere + pyright_report.elsewhere
    assert not elsewhere, "errors outside tests/typing:\n" + "\n".join(elsewhere)


def test_readme_example_is_the_pass_snippet() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "README.md has no python example"
    snippet = TYPING / "pass_readme.py"
    assert blocks[0] in snippet.read_text(), (
        f"README.md's Python example changed: copy it into {snippet} (verbatim, "
        "below the header) so that it keeps being type-checked"
    )
