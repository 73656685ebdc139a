"""The README's command-line transcripts run as shown.

Every code block of README.md is read; a line ``$ COMMAND`` starts a transcript, and the lines under it, up to a blank
line or the next ``$`` line, are its output. A command may end with a note in parentheses after two or more spaces:
``(exit status N)`` is the expected exit status (0 otherwise), ``(without OpenVINO; ...)`` runs the command as if
OpenVINO were not installed (a module ``openvino`` that raises ``ImportError`` first on ``PYTHONPATH``), and
``(the first K of its M lines)`` compares the first K lines and checks that there are M. ``python`` lines are setup
steps: they run and must succeed, with no output expected.

Each block runs in its own temporary directory holding a copy of ``models/``, through a shell whose ``PATH`` starts
with this interpreter's folder, so that ``onnx-bcast`` and ``python`` are the project's. The command's stdout and
stderr are compared together, after normalising what varies between runs and machines:

- a line is what a terminal shows of it: the text after its last ``\\r`` (the progress counter rewrites its line);
- timings (a number followed by ``s``, ``ms`` or ``µs``) become ``<time>``;
- version numbers (``1.23.2``, ``2026.4.1``: at least two dots) become ``<version>``, and without OpenVINO installed
  the ``, openvino <version>`` of ``--version`` is dropped from the expected line; the builds ``--version`` names
  (``onnx-weekly``, ``onnxruntime-gpu`` with plugin EP wheels...) are named as the stock ones;
- the temporary directory's path becomes ``.``.

A transcript that runs OpenVINO (``--runtime openvino``) is skipped where OpenVINO is not installed; the one that
shows the message for a missing OpenVINO runs everywhere.
"""

from __future__ import annotations

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
        return "--runtime openvino" in self.command and not self.without_openvino

    @property
    def line_counts(self) -> tuple[int, int] | None:
        found = re.search(r"the first (\d+) of its (\d+) lines", self.note)
        return (int(found.group(1)), int(found.group(2))) if found else None


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


BLOCKS = [ts for ts in (transcripts(block) for block in code_blocks(README.read_text(encoding="utf-8"))) if ts]


# --version names the build installed: onnx-weekly, onnxruntime-gpu..., with its plugin EP wheels
_BUILD_NAME = re.compile(r"\b(onnx|onnxruntime)-(?:weekly|gpu|openvino|directml) <version>")
_PLUGINS = re.compile(r" with onnxruntime-ep-\S+ <version>(?:, onnxruntime-ep-\S+ <version>)*")


def normalise(text: str, tmp: Path) -> list[str]:
    lines = []
    text = text.replace(str(tmp) + os.sep, "").replace(str(tmp), ".")
    for line in text.rstrip("\n").split("\n") if text else []:  # not splitlines(), which splits at \r too
        line = line.rsplit("\r", 1)[-1]
        line = re.sub(r"\b\d+(?:\.\d+)? (?:s|ms|µs)\b", "<time>", line)
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
    for name in ("runtime_target.onnx", "bad_broadcast.onnx", "many_v0.onnx", "t.npy", "bad_t.npy", "x.npy"):
        made = [c for c in commands if c.startswith("python ") and name in c]
        assert made, f"{name} is used by the README but no python line makes it"


@pytest.mark.parametrize("block", BLOCKS, ids=[f"README.md:{ts[0].line}" for ts in BLOCKS])
def test_transcript_block(block: list[Transcript], tmp_path: Path) -> None:
    shutil.copytree(ROOT / "models", tmp_path / "models", ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    skipped = []
    for transcript in block:
        if transcript.needs_openvino and not HAS_OPENVINO:
            skipped.append(transcript.command)
            continue
        done = subprocess.run(transcript.command, shell=True, cwd=tmp_path, capture_output=True,  # bytes: keep \r
                              env=environment(tmp_path, transcript.without_openvino), timeout=300)
        stdout, stderr = done.stdout.decode("utf-8"), done.stderr.decode("utf-8")
        where = f"README.md:{transcript.line}: $ {transcript.command}"
        if transcript.command.startswith("python "):
            assert done.returncode == 0, f"{where}\n{stderr}"
            continue
        got = normalise(stderr + stdout, tmp_path)  # stdout is a pipe: block-buffered, so written last
        assert done.returncode == transcript.exit_status, f"{where}: exit status {done.returncode}\n" + "\n".join(got)
        want = expected(transcript, tmp_path)
        counts = transcript.line_counts
        if counts is not None:
            assert len(got) == counts[1], f"{where}: {len(got)} lines, the README says {counts[1]}"
            got = got[:counts[0]]
        assert got == want, where
    if skipped:
        pytest.skip(f"OpenVINO is not installed: skipped {skipped}")
