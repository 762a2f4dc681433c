"""The stubs under type checkers: tests/typing/pass_*.py check cleanly, and each
tests/typing/fail_*.py has errors exactly on its line marked ``# expect-error``.

Two more snippets are generated from the run-time table,
``cudnn_rs.supported_configurations()``: every row as calls that must check, and near
misses of every line (another algorithm, compute type, dx format or rank) that must
not, so the stubs are also checked against the table of the built module (by mypy
only: pyright needs several times longer for them and adds nothing there).

mypy (--strict) and pyright (strict mode) each run once; their reports are split per
file. A checker that is not installed in this environment skips its tests with the
reason.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import cudnn_rs as cd

ROOT = Path(__file__).resolve().parents[2]
TYPING = ROOT / "tests" / "typing"
README = ROOT / "README.md"
MARK = "# expect-error"

PASS = sorted(TYPING.glob("pass_*.py"))
FAIL = sorted(TYPING.glob("fail_*.py"))
SNIPPETS = PASS + FAIL
GENERATED = ("generated_pass_rows.py", "generated_fail_near_rows.py")

FIXED_ALGOS = [
    "DataAlgo0",
    "DataAlgo1",
    "Fft",
    "FftTiling",
    "Winograd",
    "WinogradNonFused",
]
FLOAT_TYPES = ("f32", "f64", "f16", "bf16")


@dataclass
class Report:
    """Error lines per snippet file name, and the messages for failure output."""

    dirs: tuple[Path, ...]
    lines: dict[str, set[int]] = field(default_factory=dict[str, set[int]])
    messages: dict[str, list[str]] = field(default_factory=dict[str, list[str]])
    elsewhere: list[str] = field(default_factory=list[str])

    def add(self, path: str, line: int, message: str) -> None:
        p = Path(path)
        p = (p if p.is_absolute() else ROOT / p).resolve()
        if p.parent not in self.dirs:
            self.elsewhere.append(f"{path}:{line}: {message}")
            return
        self.lines.setdefault(p.name, set()).add(line)
        self.messages.setdefault(p.name, []).append(f"{line}: {message}")


def expected_lines(path: Path) -> set[int]:
    return {
        n for n, text in enumerate(path.read_text().splitlines(), 1) if MARK in text
    }


# ---------------------------------------------------------------- generated snippets

Row = tuple[str, str, str, str, str, str, str, str, int, int]


def operands(
    cfg: Row, comp: str | None = None, spatial: int | None = None, dx: bool = True
) -> str:
    """Statements making w, dy, dx (unless not `dx`) and c for the configuration of
    row `cfg`; `comp` / `spatial` override the descriptor's."""
    _, wt, wf, yt, yf, ct, xt, xf, rank, dims = cfg
    tail = (3,) * (rank - 2)
    w_shape = (8, 4, *tail)
    dy_shape, dx_shape = (2, 8, *((6,) * (rank - 2))), (2, 4, *((6,) * (rank - 2)))
    padding = (1,) * (spatial or dims)
    return (
        f"    w = cd.Filter.zeros(h, {w_shape}, dtype=cd.{wt}, format=cd.{wf})\n"
        f"    dy = cd.Tensor.zeros(h, {dy_shape}, dtype=cd.{yt}, format=cd.{yf})\n"
        + (
            f"    dx = cd.Tensor.zeros(h, {dx_shape}, dtype=cd.{xt}, format=cd.{xf})\n"
            if dx
            else ""
        )
        + f"    c = cd.ConvolutionDescriptor({padding}, comp_type=cd.{comp or ct})\n"
    )


def x_shape(cfg: Row) -> tuple[int, ...]:
    return (2, 4, *((6,) * (cfg[8] - 2)))


def generate(directory: Path) -> list[Path]:
    rows: list[Row] = cd.supported_configurations()
    keys = {r[1:] for r in rows}
    algos = {cfg: {r[0] for r in rows if r[1:] == cfg} for cfg in keys}
    header = "from __future__ import annotations\n\nimport cudnn_rs as cd\n"

    good = [header]
    for i, row in enumerate(rows):
        algo = row[0]
        if algo == "BestHeuristic":
            pick = "    a = h.get_convolution_backward_data_algorithm(w, dy, dx, c)\n"
        else:
            pick = f"    a = cd.{algo}()\n"
        fmt = f", format=cd.{row[7]}" if row[7] != row[4] else ""
        good.append(
            f"\n\ndef row_{i}(h: cd.Handle) -> None:  # {row}\n"
            + operands(row)
            + pick
            + "    h.convolution_backward_data(1.0, w, dy, c, a, None, 0.0, dx)\n"
            + "    h.get_convolution_backward_data_workspace_size(w, dy, dx, c, a)\n"
            + f"    cd.convolution_backward_data(h, w, dy, c, {x_shape(row)}, a{fmt})\n"
        )

    bad = [header]
    n = 0

    def near_miss(cfg: Row, statements: str, call: str) -> None:
        nonlocal n
        n += 1
        bad.append(
            f"\n\ndef miss_{n}(h: cd.Handle) -> None:  # {cfg}\n"
            + statements
            + f"    {call}  {MARK}\n"
        )

    call = "h.convolution_backward_data(1.0, w, dy, c, cd.{}(), None, 0.0, dx)"
    for cfg in sorted(keys):
        row = ("", *cfg)
        for algo in FIXED_ALGOS:
            if algo not in algos[cfg]:
                near_miss(row, operands(row), call.format(algo))
        for comp in FLOAT_TYPES:
            if (*cfg[:4], comp, *cfg[5:]) not in keys:
                near_miss(
                    row,
                    operands(row, comp=comp),
                    "h.get_convolution_backward_data_algorithm(w, dy, dx, c)",
                )
        other = "NHWC" if cfg[6] == "NCHW" else "NCHW"
        if (*cfg[:6], other, *cfg[7:]) not in keys:
            near_miss(
                row,
                operands(row, dx=False),
                f"cd.convolution_backward_data(h, w, dy, c, {x_shape(row)}, "
                f"format=cd.{other})",
            )
        near_miss(
            row,
            operands(row, spatial=3 if cfg[7] == 4 else 2),
            "h.find_convolution_backward_data_algorithm(w, dy, dx, c)",
        )

    paths = [directory / GENERATED[0], directory / GENERATED[1]]
    paths[0].write_text("".join(good))
    paths[1].write_text("".join(bad))
    return paths


# ---------------------------------------------------------------- the checkers


def start_mypy(files: list[Path], tmp: Path) -> subprocess.Popen[str] | str:
    """Starts mypy --strict over `files`; a str is the reason it cannot run. The
    cache is fresh each time: the generated snippets move, and mypy caches by module
    name."""
    if importlib.util.find_spec("mypy") is None:
        return f"mypy is not installed for {sys.executable}"
    args = ["--strict", "--output", "json", "--no-error-summary"]
    args += ["--cache-dir", str(tmp / "mypy_cache")]
    return subprocess.Popen(
        [sys.executable, "-m", "mypy", *args, *map(str, files)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def mypy_result(proc: subprocess.Popen[str], dirs: tuple[Path, ...]) -> Report:
    stdout, stderr = proc.communicate()
    if proc.returncode not in (0, 1):
        pytest.fail(f"mypy crashed (exit {proc.returncode}):\n{stderr}")
    report = Report(dirs)
    for line in stdout.splitlines():
        if not line.startswith("{"):
            continue
        d = json.loads(line)
        if d["severity"] == "error":
            report.add(d["file"], d["line"], f"{d['message']} [{d['code']}]")
    return report


def start_pyright(files: list[Path], tmp: Path) -> subprocess.Popen[str] | str:
    """Starts pyright (strict mode) over `files`; a str is the reason it cannot
    run."""
    exe = Path(sys.executable).parent / "pyright"
    if not exe.exists():
        return f"pyright is not installed next to {sys.executable}"
    config = tmp / "pyrightconfig.json"
    config.write_text(json.dumps({"typeCheckingMode": "strict"}))
    args = ["--outputjson", "--project", str(config), "--pythonpath", sys.executable]
    return subprocess.Popen(
        [str(exe), *args, *map(str, files)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYRIGHT_PYTHON_IGNORE_WARNINGS": "1"},
    )


def pyright_result(proc: subprocess.Popen[str], dirs: tuple[Path, ...]) -> Report | str:
    stdout, stderr = proc.communicate()
    start = stdout.find("{")
    if start < 0:
        # The pip wrapper could not start pyright (e.g. no Node.js to be had).
        return f"pyright did not run (exit {proc.returncode}): {stderr[-500:]}"
    report = Report(dirs)
    for d in json.loads(stdout[start:])["generalDiagnostics"]:
        if d["severity"] == "error":
            line = d["range"]["start"]["line"] + 1
            report.add(d["file"], line, f"{d['message']} [{d.get('rule', '')}]")
    return report


@dataclass
class Checked:
    """What the checkers said, or why each could not run."""

    mypy: Report | str
    pyright: Report | str
    generated: Path


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> Checked:
    """Both checkers, run side by side, once for the module."""
    tmp = tmp_path_factory.mktemp("typing")
    generated = [tmp / name for name in GENERATED]
    generate(tmp)
    mypy = start_mypy(SNIPPETS + generated, tmp)
    pyright = start_pyright(SNIPPETS, tmp)
    dirs = (TYPING.resolve(), tmp.resolve())
    return Checked(
        mypy=mypy if isinstance(mypy, str) else mypy_result(mypy, dirs),
        pyright=pyright if isinstance(pyright, str) else pyright_result(pyright, dirs),
        generated=tmp,
    )


@pytest.fixture(scope="module")
def mypy_report(checked: Checked) -> Report:
    if isinstance(checked.mypy, str):
        pytest.skip(checked.mypy)
    return checked.mypy


@pytest.fixture(scope="module")
def pyright_report(checked: Checked) -> Report:
    if isinstance(checked.pyright, str):
        pytest.skip(checked.pyright)
    return checked.pyright


def check(report: Report, snippet: Path, checker: str) -> None:
    got = report.lines.get(snippet.name, set())
    want = expected_lines(snippet)
    messages = "\n".join(report.messages.get(snippet.name, [])) or "(none)"
    assert got == want, (
        f"{checker} reports errors on lines {sorted(got)} of {snippet}, "
        f"expected exactly {sorted(want)}:\n{messages}"
    )


# ---------------------------------------------------------------- the tests


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


@pytest.mark.parametrize("name", GENERATED)
def test_mypy_runtime_table(name: str, checked: Checked, mypy_report: Report) -> None:
    check(mypy_report, checked.generated / name, "mypy --strict")


def test_no_errors_outside_the_snippets(
    mypy_report: Report, pyright_report: Report
) -> None:
    elsewhere = mypy_report.elsewhere + pyright_report.elsewhere
    assert not elsewhere, "errors outside the snippets:\n" + "\n".join(elsewhere)


def test_misuse_names_the_wrong_operand(
    mypy_report: Report, pyright_report: Report
) -> None:
    """A filter of the wrong data type is reported as such, briefly: the general
    overloads (operands known only at run time) must not look like a closer match
    whose only fault is a later operand."""
    name = "fail_filter_dtype.py"
    mypy = mypy_report.messages.get(name, [])
    assert len(mypy) == 1 and '"Filter[F64, NCHW, Rank4]"' in mypy[0], mypy
    pyright = "\n".join(pyright_report.messages.get(name, []))
    assert 'parameter "w"' in pyright and 'parameter "dx"' not in pyright, pyright


# Misuses whose mypy report must stay short (the error and its notes, per call): mypy
# lists every overload of a call that no overload nearly fits, hence the misuse
# overloads of the stubs.
MISUSE = f"""\
from __future__ import annotations

import numpy as np

import cudnn_rs as cd


def numpy_operands(h: cd.Handle) -> None:
    w = np.zeros((8, 4, 3, 3), dtype=np.float32)
    dy = np.zeros((2, 8, 16, 16), dtype=np.float32)
    dx = np.zeros((2, 4, 16, 16), dtype=np.float32)
    c = cd.ConvolutionDescriptor((1, 1))
    a = cd.DataAlgo0()
    cd.convolution_backward_data(h, w, dy, c, (2, 4, 16, 16))  {MARK}
    h.convolution_backward_data(1.0, w, dy, c, a, None, 0.0, dx)  {MARK}
    h.get_convolution_backward_data_workspace_size(w, dy, dx, c, a)  {MARK}
    cd.Tensor.from_numpy(dy, h)  {MARK}
    cd.Filter.from_numpy(w, h)  {MARK}


def wrong_dtype_filter(h: cd.Handle) -> None:
    w = cd.Filter.zeros(h, (8, 4, 3, 3), dtype=cd.f64)
    dy = cd.Tensor.zeros(h, (2, 8, 16, 16))
    dx = cd.Tensor.zeros(h, (2, 4, 16, 16))
    c = cd.ConvolutionDescriptor((1, 1))
    a = cd.DataAlgo0()
    h.convolution_backward_data(1.0, w, dy, c, a, None, 0.0, dx)  {MARK}
    h.get_convolution_backward_data_workspace_size(w, dy, dx, c, a)  {MARK}
    cd.convolution_backward_data(h, w, dy, c, (2, 4, 16, 16))  {MARK}


def wrong_algorithm(h: cd.Handle) -> None:
    w = cd.Filter.zeros(h, (8, 4, 3, 3), dtype=cd.f16)
    dy = cd.Tensor.zeros(h, (2, 8, 16, 16), dtype=cd.f16)
    dx = cd.Tensor.zeros(h, (2, 4, 16, 16), dtype=cd.f16)
    c = cd.ConvolutionDescriptor((1, 1))
    a = cd.Winograd()
    h.convolution_backward_data(1.0, w, dy, c, a, None, 0.0, dx)  {MARK}
    h.get_convolution_backward_data_workspace_size(w, dy, dx, c, a)  {MARK}
    cd.convolution_backward_data(h, w, dy, c, (2, 4, 16, 16), a)  {MARK}
"""
MAX_MISUSE_LINES = 20


def test_misuse_errors_are_short(tmp_path: Path) -> None:
    """Each misuse in MISUSE is an error in mypy, reported in at most
    MAX_MISUSE_LINES lines (the error and its notes), and nothing else is."""
    if importlib.util.find_spec("mypy") is None:
        pytest.skip(f"mypy is not installed for {sys.executable}")
    snippet = tmp_path / "misuse.py"
    snippet.write_text(MISUSE)
    args = ["--strict", "--no-error-summary", "--no-pretty"]
    args += ["--cache-dir", str(tmp_path / "mypy_cache")]
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", *args, snippet.name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode not in (0, 1):
        pytest.fail(f"mypy crashed (exit {proc.returncode}):\n{proc.stderr}")
    reported: dict[int, list[str]] = {}
    for line in proc.stdout.splitlines():
        m = re.match(rf"{re.escape(snippet.name)}:(\d+): (?:error|note): ", line)
        assert m, f"unexpected mypy output: {line}"
        reported.setdefault(int(m[1]), []).append(line)
    want = expected_lines(snippet)
    assert set(reported) == want, proc.stdout
    for n in sorted(want):
        lines = reported[n]
        assert any(": error: " in line for line in lines), lines
        assert len(lines) <= MAX_MISUSE_LINES, (
            f"mypy reports line {n} of the misuse snippet in {len(lines)} lines "
            f"(at most {MAX_MISUSE_LINES}):\n" + "\n".join(lines)
        )


def test_readme_example_is_the_pass_snippet() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "README.md has no python example"
    snippet = TYPING / "pass_readme.py"
    assert blocks[0] in snippet.read_text(), (
        f"README.md's Python example changed: copy it into {snippet} (verbatim, "
        "below the header) so that it keeps being type-checked"
    )
