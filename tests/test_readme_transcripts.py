"""The README's command-line transcripts and ``>>>`` examples run as shown (and those of a few docs pages).

Every code block of README.md (and of the pages in ``DOC_TRANSCRIPTS``) is read; a line ``$ COMMAND`` starts a
transcript, and the lines under it, up to a blank line or the next ``$`` line, are its output. A command may end
with a note in parentheses after two or more spaces: ``(exit status N)`` is the expected exit status (0 otherwise),
``(without OpenVINO; ...)`` runs the command as if OpenVINO were not installed (a module ``openvino`` that raises
``ImportError`` first on ``PYTHONPATH``), and ``(the first K of its M lines)`` and ``(the last K of its M lines)``
compare those K lines and check that there are M. ``python`` lines are setup steps: they run and must succeed, with
no output expected.

Each block runs in its own temporary directory holding a copy of ``models/``, through a shell whose ``PATH`` starts
with this interpreter's folder, so that ``onnx-bcast`` and ``python`` are the project's. The command's stdout and
stderr are compared together, after normalising what varies between runs and machines:

- a line is what a terminal shows of it: the text after its last ``\\r`` (the progress counter rewrites its line);
- timings (a number followed by ``s``, ``ms`` or ``µs``) become ``<time>``, and so do the two run-time columns (ms)
  of ``demo``'s table: a line that ends in two numbers with three decimals ends in ``<time> <time>``, whatever the
  spaces that right-align them;
- version numbers (``1.23.2``, ``2026.4.1``: at least two dots) become ``<version>``, and without OpenVINO installed
  the ``, openvino <version>`` of ``--version`` is dropped from the expected line; the builds ``--version`` names
  (``onnx-weekly``, ``onnxruntime-gpu`` with plugin EP wheels...) are named as the stock ones;
- the temporary directory's path becomes ``.``.

A transcript that runs OpenVINO (``--runtime openvino``, ``import openvino``, ``from-ir``) is skipped where OpenVINO
is not installed (``from-ir`` also where onnxifier is not); the one that shows the message for a missing OpenVINO runs
everywhere.

The README's ``>>>`` examples run as doctests (``test_readme_examples``): each ``pycon`` block in its own temporary
directory holding ``models/`` and the files that the README's ``python`` setup lines make, after them. A block that
imports OpenVINO is skipped where it is not installed. Every ``python``/``pycon`` block of the README must hold
``>>>`` examples, so that no Python example goes untested.
"""

from __future__ import annotations

import doctest
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
HAS_OPENVINO = importlib.util.find_spec("openvino") is not None
HAS_ONNXIFIER = importlib.util.find_spec("onnxifier") is not None
NOTE = re.compile(r"^(?P<command>.*?)(?:\s{2,}\((?P<note>[^()]*)\))?$")


@dataclass
class Transcript:
    command: str
    note: str
    output: list[str]
    line: int

    @property
    def exit_status(self) -> int:
        found = re.search(r"exit status (\d+)", self.note)
        return int(found.group(1)) if found else 0

    @property
    def without_openvino(self) -> bool:
        return "without OpenVINO" in self.note

    @property
    def needs_openvino(self) -> bool:
        uses = ("--runtime openvino", "import openvino", "onnx-bcast from-ir")
        return any(use in self.command for use in uses) and not self.without_openvino

    @property
    def needs_onnxifier(self) -> bool:
        return "onnx-bcast from-ir" in self.command

    @property
    def line_counts(self) -> tuple[str, int, int] | None:
        """("first" or "last", K, M) from a note ``the first K of its M lines``, else None."""
        found = re.search(r"the (first|last) (\d+) of its (\d+) lines", self.note)
        return (found.group(1), int(found.group(2)), int(found.group(3))) if found else None


def code_blocks(text: str) -> list[list[tuple[int, str]]]:
    """The README's fenced code blocks, as (line number, line) lists."""
    blocks, current = [], None
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            if current is None:
                current = []
            else:
                blocks.append(current)
                current = None
        elif current is not None:
            current.append((number, line))
    return blocks


def transcripts(block: list[tuple[int, str]]) -> list[Transcript]:
    found: list[Transcript] = []
    current = None
    for number, line in block:
        if line.startswith("$ "):
            match = NOTE.match(line[2:])
            current = Transcript(match.group("command"), match.group("note") or "", [], number)
            found.append(current)
        elif not line.strip():
            current = None
        elif current is not None:
            current.output.append(line)
    return found


def file_blocks(path: Path) -> list[list[Transcript]]:
    return [ts for ts in (transcripts(block) for block in code_blocks(path.read_text(encoding="utf-8"))) if ts]


BLOCKS = file_blocks(README)
# docs pages whose transcripts run too (the others show runs of bench/ scripts, which take minutes)
DOC_TRANSCRIPTS = [ROOT / "docs" / "legacy-onnx.md", ROOT / "docs" / "big-models.md"]
ALL_BLOCKS = [(path, ts) for path in [README, *DOC_TRANSCRIPTS] for ts in file_blocks(path)]


#: demo's table ends each row with its two run times in ms, three decimals each, right-aligned
_TIME_COLUMNS = re.compile(r"(?:\s+\d+\.\d{3}){2}$")
# --version names the build installed: onnx-weekly, onnxruntime-gpu..., with its plugin EP wheels
_BUILD_NAME = re.compile(r"\b(onnx|onnxruntime)-(?:weekly|gpu|openvino|directml) <version>")
_PLUGINS = re.compile(r" with onnxruntime-ep-\S+ <version>(?:, onnxruntime-ep-\S+ <version>)*")


def normalise(text: str, tmp: Path) -> list[str]:
    lines = []
    text = text.replace(str(tmp) + os.sep, "").replace(str(tmp), ".")
    for line in text.rstrip("\n").split("\n") if text else []:  # not splitlines(), which splits at \r too
        line = line.rsplit("\r", 1)[-1]
        line = re.sub(r"\b\d+(?:\.\d+)? (?:s|ms|µs)\b", "<time>", line)
        line = _TIME_COLUMNS.sub(" <time> <time>", line)
        line = re.sub(r"\b\d+\.\d+\.\d+[\w.+-]*", "<version>", line)
        line = _BUILD_NAME.sub(r"\1 <version>", _PLUGINS.sub("", line))
        lines.append(line.rstrip())
    return lines


def expected(transcript: Transcript, tmp: Path) -> list[str]:
    lines = normalise("\n".join(transcript.output), tmp)
    if not HAS_OPENVINO:
        lines = [line.replace(", openvino <version>", "") for line in lines]
    return lines


def environment(tmp: Path, without_openvino: bool) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    if without_openvino:
        shim = tmp / "_no_openvino"
        shim.mkdir(exist_ok=True)
        (shim / "openvino.py").write_text("raise ImportError(\"No module named 'openvino'\", name='openvino')\n")
        env["PYTHONPATH"] = os.pathsep.join(p for p in [str(shim), env.get("PYTHONPATH", "")] if p)
    return env


def test_readme_has_transcripts() -> None:
    commands = [t.command for ts in BLOCKS for t in ts]
    assert sum(c.startswith("onnx-bcast ") for c in commands) >= 15, commands
    for name in ("runtime_target.onnx", "bad_broadcast.onnx", "model.xml", "t.npy", "bad_t.npy", "x.npy"):
        made = [c for c in commands if c.startswith("python ") and name in c]
        assert made, f"{name} is used by the README but no python line makes it"


@pytest.mark.parametrize("block", ALL_BLOCKS, ids=[f"{p.relative_to(ROOT)}:{ts[0].line}" for p, ts in ALL_BLOCKS])
def test_transcript_block(block: tuple[Path, list[Transcript]], tmp_path: Path) -> None:
    path, block_transcripts = block
    shutil.copytree(ROOT / "models", tmp_path / "models", ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    skipped = []
    for transcript in block_transcripts:
        if (transcript.needs_openvino and not HAS_OPENVINO) or (transcript.needs_onnxifier and not HAS_ONNXIFIER):
            skipped.append(transcript.command)
            continue
        done = subprocess.run(transcript.command, shell=True, cwd=tmp_path, capture_output=True,  # bytes: keep \r
                              env=environment(tmp_path, transcript.without_openvino), timeout=300)
        stdout, stderr = done.stdout.decode("utf-8"), done.stderr.decode("utf-8")
        where = f"{path.relative_to(ROOT)}:{transcript.line}: $ {transcript.command}"
        if transcript.command.startswith("python "):
            assert done.returncode == 0, f"{where}\n{stderr}"
            continue
        got = normalise(stderr + stdout, tmp_path)  # stdout is a pipe: block-buffered, so written last
        assert done.returncode == transcript.exit_status, f"{where}: exit status {done.returncode}\n" + "\n".join(got)
        want = expected(transcript, tmp_path)
        counts = transcript.line_counts
        if counts is not None:
            which, shown, total = counts
            assert len(got) == total, f"{where}: {len(got)} lines, the README says {total}\n" + "\n".join(got)
            got = got[:shown] if which == "first" else got[len(got) - shown:]
        assert got == want, where
    if skipped:
        pytest.skip(f"OpenVINO or onnxifier is not installed: skipped {skipped}")


def python_blocks(path: Path) -> list[tuple[str, int, str]]:
    """A markdown file's ``python``/``pycon`` fenced blocks, as (language, line number of the first line, text)."""
    found: list[tuple[str, int, str]] = []
    language, start, lines = None, 0, []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.startswith("```"):
            lines.append(line)
        elif language is None:
            language, start, lines = line[3:].strip() or "text", number + 1, []
        else:
            if language in ("python", "pycon"):
                found.append((language, start, "\n".join(lines) + "\n"))
            language = None
    return found


DOCS = sorted((ROOT / "docs").glob("*.md"))
EXAMPLES = [(path, *block) for path in [README, *DOCS] for block in python_blocks(path) if ">>> " in block[2]]
SETUP_LINES = [t.command for ts in BLOCKS for t in ts if t.command.startswith("python ")]
MADE_FILE = re.compile(r"(?<![\w/.-])[\w-]+\.(?:onnx|npy|xml)\b")  # a file in the working folder, not models/...


def test_every_readme_python_block_is_tested() -> None:
    blocks = python_blocks(README)
    assert len(blocks) >= 2, blocks
    for _, line, text in blocks:
        assert ">>> " in text, f"README.md:{line}: a Python block without >>> examples is not run by the tests"


@pytest.mark.parametrize("example", EXAMPLES, ids=[f"{p.relative_to(ROOT)}:{line}" for p, _, line, _ in EXAMPLES])
def test_readme_examples(example: tuple[Path, str, int, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, _, line, text = example
    if "import openvino" in text and not HAS_OPENVINO:
        pytest.skip("OpenVINO is not installed")
    shutil.copytree(ROOT / "models", tmp_path / "models", ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    used = set(MADE_FILE.findall(text))
    for command in SETUP_LINES:  # the README's python lines that make a file the examples use
        if used & set(MADE_FILE.findall(command)):
            done = subprocess.run(command, shell=True, cwd=tmp_path, capture_output=True, text=True,
                                  env=environment(tmp_path, False), timeout=300)
            assert done.returncode == 0, f"{command}\n{done.stderr}"
    name = f"{path.relative_to(ROOT)}:{line}"
    test = doctest.DocTestParser().get_doctest(text, {}, name, str(path), line - 1)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report: list[str] = []
    monkeypatch.chdir(tmp_path)
    runner.run(test, out=report.append)
    assert test.examples, name
    assert runner.failures == 0, "".join(report)


def test_ci_runs_the_readme_s_two_commands_verbatim() -> None:
    """The README's first two commands (the demo on a fresh machine, the tests) are lines of ``.ci/run`` as written,
    so CI runs what a newcomer types."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = re.findall(r"```sh\n(.+?)\n```", readme)[:2]
    assert len(commands) == 2 and "demo" in commands[0] and "pytest" in commands[1], commands
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    for command in commands:
        assert command in ci, f"not a line of .ci/run: {command}"
