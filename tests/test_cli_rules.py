"""The command line's own rules: no command writes over a file it reads (however the path is spelled) or over an
existing path unless ``--force``; usage errors exit 2 naming the option; options may come before the model; the
Python API as the README gives it."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import pytest

import onnx_bcast
from onnx_bcast.cli.main import main
from onnx_bcast.model import files
from onnx_bcast.models import MODELS_DIR

NCHW_BIAS = MODELS_DIR / "nchw_bias_explicit.onnx"
EXPAND_MODES = MODELS_DIR / "expand_modes.onnx"

#: each writing command, with ``{out}`` where its output goes, and every file it reads
WRITERS: dict[str, tuple[list[str], list[str]]] = {
    "convert": (["convert", "m.onnx", "-o", "{out}", "--verify", "--input", "features=features.npy"],
                ["m.onnx", "weights.bin", "features.npy"]),
    "run": (["run", "m.onnx", "--input", "features=features.npy", "--save-outputs", "{out}"],
            ["m.onnx", "weights.bin", "features.npy"]),
    "from-ir": (["from-ir", "m.xml", "-o", "{out}", "--verify", "--input", "features=features.npy"],
                ["m.xml", "m.bin", "features.npy"]),
}


def _link(kind: str) -> Callable[[str], str]:
    def make(name: str) -> str:
        link = f"{kind}_{name}"
        (os.symlink if kind == "symlink" else os.link)(name, link)
        return link

    return make


#: ways to spell the path of a file in the current folder (the links are made beside it)
SPELLINGS: dict[str, Callable[[str], str]] = {
    "plain": lambda name: name,
    "dot-slash": lambda name: f"./{name}",
    "dot-dot": lambda name: f"sub/../{name}",
    "absolute": lambda name: str(Path.cwd() / name),
    "symlink": _link("symlink"),
    "hard-link": _link("hardlink"),
}


def _cli(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "onnx_bcast", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


def _digests(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (links followed) and its SHA-256."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The current folder, holding what the writing commands read: a model with its weights as external data
    (m.onnx, weights.bin), an ``--input`` file (features.npy), and an IR's two files (m.xml, m.bin: never parsed, as
    the output is checked before the conversion)."""
    onnx.save(onnx.load(str(NCHW_BIAS)), tmp_path / "m.onnx", save_as_external_data=True, location="weights.bin",
              size_threshold=0)
    np.save(tmp_path / "features.npy", np.ones((1, 16, 50, 50), np.float32))
    (tmp_path / "m.xml").write_text("<net/>")
    (tmp_path / "m.bin").write_bytes(bytes(range(16)))
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


# ------------------------------------------------------------------------------------------------ files read


@pytest.mark.parametrize("spelling", list(SPELLINGS))
@pytest.mark.parametrize("command", list(WRITERS))
def test_no_command_writes_over_a_file_it_reads(command: str, spelling: str, workdir: Path,
                                                capsys: pytest.CaptureFixture) -> None:
    """Each writing command with its output aimed at each file it reads, with and without --force: exit status 1,
    one line naming what the path is, and every file byte-identical afterwards."""
    args, reads = WRITERS[command]
    for read in reads:
        target = SPELLINGS[spelling](read)
        before = _digests(workdir)
        for force in ([], ["--force"]):
            capsys.readouterr()
            status = main([arg.replace("{out}", target) for arg in args] + force)
            line = _one_line(capsys.readouterr().err)
            assert status == 1, (read, force, line)
            assert line.startswith(f"onnx-bcast {command}: ") and "which this command reads" in line, line
            assert _digests(workdir) == before, (read, force)


def test_run_never_saves_its_outputs_over_the_model(tmp_path: Path) -> None:
    """The issue's case, as a user types it: ``run m.onnx --save-outputs m.onnx`` replaced the model by an archive."""
    model = tmp_path / "m.onnx"
    model.write_bytes(EXPAND_MODES.read_bytes())
    proc = _cli("run", "m.onnx", "--save-outputs", "m.onnx", cwd=tmp_path)
    assert proc.returncode == 1 and proc.stdout == "", proc
    assert _one_line(proc.stderr) == ("onnx-bcast run: --save-outputs m.onnx: is the input model, which this command "
                                      "reads; choose another path")
    assert model.read_bytes() == EXPAND_MODES.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx"]


# ------------------------------------------------------------------------------------------------ --force


@pytest.mark.parametrize("existing", ["file", "dangling-symlink"])
@pytest.mark.parametrize("command", ["convert", "run", "from-ir"])
def test_an_existing_output_is_refused_without_force(command: str, existing: str, workdir: Path,
                                                     capsys: pytest.CaptureFixture) -> None:
    args, _ = WRITERS[command]
    if existing == "file":
        (workdir / "out").write_bytes(b"the user's file")
    else:
        os.symlink("nowhere", workdir / "out")
    before = _digests(workdir)
    assert main([arg.replace("{out}", "out") for arg in args]) == 1
    line = _one_line(capsys.readouterr().err)
    assert line == f"onnx-bcast {command}: {'--save-outputs ' if command == 'run' else ''}out: exists; choose " \
                   "another path, or give --force to overwrite it"
    assert _digests(workdir) == before
    assert os.readlink(workdir / "out") == "nowhere" if existing != "file" else True


def test_force_overwrites_the_output(tmp_path: Path) -> None:
    """With --force, convert and run --save-outputs replace a file that exists (and is not one they read)."""
    for name in ("out.onnx", "out.npz"):
        (tmp_path / name).write_bytes(b"old")
    convert = _cli("convert", EXPAND_MODES, "-o", "out.onnx", "--force", cwd=tmp_path)
    run = _cli("run", EXPAND_MODES, "--save-outputs", "out.npz", "--force", cwd=tmp_path)
    assert (convert.returncode, run.returncode) == (0, 0), (convert.stderr, run.stderr)
    assert not any(n.domain == "onnx_bcast" for n in onnx.load(str(tmp_path / "out.onnx")).graph.node)
    assert set(np.load(tmp_path / "out.npz")) == {o.name for o in onnx.load(str(EXPAND_MODES)).graph.output}


def test_force_without_save_outputs_is_a_usage_error(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["run", str(EXPAND_MODES), "--force"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "onnx-bcast run: error: argument --force: overwrites the file of --save-outputs, which is not given")


def test_save_never_writes_over_a_data_file_it_did_not_make(tmp_path: Path) -> None:
    """A model saved with external data whose ``<name>.data`` exists already: the data goes to ``<name>.1.data`` and
    the existing file keeps its bytes (it was written over before)."""
    model = onnx.load(str(NCHW_BIAS))
    model.graph.initializer[0].CopyFrom(onnx.numpy_helper.from_array(np.arange(1024, dtype=np.float32), "bias"))
    theirs = tmp_path / "out.onnx.data"
    theirs.write_bytes(b"someone else's data")
    files.save_atomically(model, tmp_path / "out.onnx", external=True)
    assert theirs.read_bytes() == b"someone else's data"
    graph = onnx.load(str(tmp_path / "out.onnx"), load_external_data=False).graph
    bias = next(t for t in graph.initializer if t.name == "bias")
    assert {e.value for e in bias.external_data if e.key == "location"} == {"out.onnx.1.data"}
    bias = next(t for t in onnx.load(str(tmp_path / "out.onnx")).graph.initializer if t.name == "bias")
    np.testing.assert_array_equal(onnx.numpy_helper.to_array(bias), np.arange(1024, dtype=np.float32))


def test_convert_never_names_its_output_as_a_data_file_it_places(workdir: Path, capsys: pytest.CaptureFixture
                                                                  ) -> None:
    """In another folder, the model's data file is placed beside the output under its own name: an output of that
    name would be written over it (a failure naming the staged file, before)."""
    assert main(["convert", "m.onnx", "-o", "sub/weights.bin"]) == 1
    assert _one_line(capsys.readouterr().err) == ("onnx-bcast convert: sub/weights.bin: is where the model's external "
                                                  "data file 'weights.bin' goes; choose another name; nothing written")
    assert list((workdir / "sub").iterdir()) == []


def test_from_ir_checks_the_output_before_converting(workdir: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture) -> None:
    import onnx_bcast.onnxifier

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("converted before the output path was checked")

    monkeypatch.setattr(onnx_bcast.onnxifier, "ir_to_onnx", never)
    (workdir / "taken.onnx").write_bytes(b"")
    expected = {
        "missing/out.onnx": "missing/out.onnx: folder 'missing' does not exist",
        "sub": "sub: is a directory; give the path of the file to write (e.g. sub/m.onnx)",
        "taken.onnx": "taken.onnx: exists; choose another path, or give --force to overwrite it",
    }
    for output, message in expected.items():
        assert main(["from-ir", "m.xml", "-o", output]) == 1
        assert _one_line(capsys.readouterr().err) == f"onnx-bcast from-ir: {message}"


# ------------------------------------------------------------------------------------------------ usage errors


@pytest.mark.parametrize(("args", "message"), [
    (["run", "m.onnx", "--input", "features"],
     "argument --input: expected NAME=FILE.npy (e.g. x=x.npy), got 'features'"),
    (["run", "m.onnx", "--input", "=x.npy"], "argument --input: expected NAME=FILE.npy (e.g. x=x.npy), got '=x.npy'"),
    (["run", "m.onnx", "--input", "features="],
     "argument --input: expected NAME=FILE.npy (e.g. x=x.npy), got 'features='"),
    (["convert", "m.onnx", "-o", "o.onnx", "--verify", "--input", "features"],
     "argument --input: expected NAME=FILE.npy (e.g. x=x.npy), got 'features'"),
    (["run", "m.onnx", "--input", "features=features.npy", "--input", "features=features.npy"],
     "argument --input: 'features' is given twice (once per input)"),
    (["run", "m.onnx", "--input-shapes", "features:[1,16,50,50]", "features:[1,16,50,50]"],
     "argument --input-shapes: 'features' is given twice (once per input)"),
    (["convert", "m.onnx", "-o", "o.onnx", "--seed", "0"],
     "argument --seed: only used with --verify (what the verification runs)"),
    (["from-ir", "m.xml", "-o", "o.onnx", "--input", "features=features.npy"],
     "argument --input: only used with --verify (what the verification runs)"),
    (["from-ir", "m.xml", "-o", "o.onnx", "--keep-failed"],
     "argument --keep-failed: only used with --verify (it writes the model that fails the verification)"),
    (["from-ir", "m.xml", "-o", "o.onnx", "--verify", "--input", "features=features.npy", "--input",
      "features=features.npy"], "argument --input: 'features' is given twice (once per input)"),
    (["from-ir", "m.xml", "-o", "o.onnx", "--verify", "--input-shapes", "features:[1,2]", "features:[1,2]"],
     "argument --input-shapes: 'features' is given twice (once per input)"),
    (["from-ir", "m.xml", "-o", "o.onnx", "--verify", "--input", "features=features.npy", "--input-shapes",
      "features:[1,2]"], "argument --input-shapes: 'features' is given by --input too (its shape is the file's)"),
], ids=["no-file", "no-name", "empty-file", "convert-verify", "input-twice", "input-shapes-twice",
        "convert-seed-without-verify", "from-ir-input-without-verify", "from-ir-keep-failed-without-verify",
        "from-ir-input-twice", "from-ir-input-shapes-twice", "from-ir-input-and-shapes"])
def test_usage_errors_exit_2_with_one_error_line(args: list[str], message: str, workdir: Path) -> None:
    before = _digests(workdir)
    proc = _cli(*args, cwd=workdir)
    assert proc.returncode == 2, proc
    errors = [line for line in proc.stderr.splitlines() if not line.startswith(("usage:", " "))]
    assert errors == [f"onnx-bcast {args[0]}: error: {message}"], proc.stderr
    assert _digests(workdir) == before


# ------------------------------------------------------------------------------------------------ argument order


def test_options_may_come_before_the_model(workdir: Path) -> None:
    """The issue's command (``--input-shapes``, which takes several items, before the model) and other orders of
    the same options give what the model-first order gives, on the same random input (seed 0)."""
    shapes = ["--input-shapes", "features:[1,16,50,50]"]
    orders = {
        "first": ["run", "m.onnx", *shapes, "--save-outputs", "first.npz"],
        "shapes-first": ["run", *shapes, "m.onnx", "--save-outputs", "shapes-first.npz"],
        "model-last": ["run", "--seed", "0", *shapes, "--save-outputs", "model-last.npz", "m.onnx"],
    }
    for name, args in orders.items():
        proc = _cli(*args, cwd=workdir)
        assert proc.returncode == 0, (name, proc.stderr)
    saved = {name: dict(np.load(workdir / f"{name}.npz")) for name in orders}
    assert list(saved["first"]) == ["biased"]
    for name in orders:
        np.testing.assert_array_equal(saved[name]["biased"], saved["first"]["biased"])


@pytest.mark.parametrize(("argv", "split"), [
    (["--input-shapes", "a:[1]", "b:[2]", "m.onnx"], ["--input-shapes", "a:[1]", "--input-shapes", "b:[2]", "m.onnx"]),
    (["--input-shapes=a:[1]", "b:[]", "m.onnx"], ["--input-shapes=a:[1]", "--input-shapes", "b:[]", "m.onnx"]),
    (["--input-sh", "a:[1]", "b:[2,x]"], ["--input-sh", "a:[1]", "--input-shapes", "b:[2,x]"]),
    (["--input-shapes", "m.onnx", "b:[1]"], ["--input-shapes", "m.onnx", "--input-shapes", "b:[1]"]),
    (["m.onnx", "--input", "a:[1]", "b:[1]"], ["m.onnx", "--input", "a:[1]", "b:[1]"]),
    (["--input-shapes", "a:[1]", "--", "b:[1]"], ["--input-shapes", "a:[1]", "--", "b:[1]"]),
], ids=["two-items", "equals", "abbreviated", "first-item-kept", "not-after-input-shapes", "after-dashes"])
def test_input_shapes_items_are_split_one_per_option(argv: list[str], split: list[str]) -> None:
    from onnx_bcast.cli.args import split_input_shapes

    assert split_input_shapes(argv) == split


def test_convert_help_says_what_opset_does() -> None:
    from onnx_bcast.cli.args import build_parser

    sub = build_parser()._subparsers._group_actions[0].choices["convert"]
    text = " ".join(sub.format_help().split())
    assert "A legacy model (opset 1-6) is imported at this opset (7 or more; default: 17)" in text
    assert "a different --opset, lower or higher, is refused" in text
    assert "--force overwrite the output if it exists (never a file the command reads)" in text


def test_provider_options_say_what_each_does() -> None:
    """--ep-library's help is its own: convert's once read 'with --verify: the converted model runs on register a
    plugin ...' (the --providers prefix)."""
    from onnx_bcast.cli.args import build_parser

    commands = build_parser()._subparsers._group_actions[0].choices
    convert, run = (" ".join(commands[name].format_help().split()) for name in ("convert", "run"))
    assert "--providers NAME,NAME,... with --verify: the converted model runs on ONNX Runtime's execution " \
           "providers, in order of preference" in convert
    assert "--ep-library PATH with --verify: register a plugin execution provider's library (a file, or an " \
           "installed module with get_library_path(), e.g. onnxruntime_ep_openvino); ONNX Runtime >= 1.23" in convert
    assert "--providers NAME,NAME,... ONNX Runtime's execution providers, in order of preference" in run
    assert "--ep-library PATH register a plugin execution provider's library (a file" in run
    assert "runs on register" not in convert + run


def test_convert_refuses_an_opset_other_than_the_models(tmp_path: Path) -> None:
    """What the help says: the model imports opset 17; 13 and 18 are refused, one line, nothing written."""
    for opset in ("13", "18"):
        proc = _cli("convert", EXPAND_MODES, "-o", "o.onnx", "--opset", opset, cwd=tmp_path)
        assert proc.returncode == 1 and "already uses default-domain opset 17" in _one_line(proc.stderr)
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------------------------------ models.build


def test_build_makes_a_new_out_dir_and_refuses_existing_files(tmp_path: Path) -> None:
    new = tmp_path / "new" / "models"
    made = subprocess.run([sys.executable, "-m", "onnx_bcast.models.build", "--out-dir", str(new)],
                          capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr
    built = {p.name: p.read_bytes() for p in new.iterdir()}
    assert built == {p.name: p.read_bytes() for p in MODELS_DIR.glob("*.onnx")}  # byte for byte, as documented
    (new / "expand_modes.onnx").write_bytes(b"mine")
    again = subprocess.run([sys.executable, "-m", "onnx_bcast.models.build", "--out-dir", str(new)],
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 1
    line = _one_line(again.stderr)
    assert line.startswith(f"onnx_bcast.models.build: {new}: already holds ")
    assert line.endswith("; give --force to overwrite, or another --out-dir")
    assert set(line.split("holds ")[1].split(";")[0].split(", ")) == set(built)
    assert (new / "expand_modes.onnx").read_bytes() == b"mine"


# ------------------------------------------------------------------------------------------------ Python API


def test_verification_error_is_in_the_namespace() -> None:
    from onnx_bcast.verify import VerificationError

    assert onnx_bcast.VerificationError is VerificationError and "VerificationError" in onnx_bcast.__all__
    assert issubclass(onnx_bcast.VerificationError, ValueError)


@pytest.mark.parametrize("data", [b"garbage", b"", EXPAND_MODES.read_bytes()[:40]], ids=["garbage", "empty", "cut"])
def test_bytes_that_are_no_model_are_refused_as_a_broken_file_is(data: bytes, tmp_path: Path) -> None:
    path = tmp_path / "broken.onnx"
    path.write_bytes(data)
    with pytest.raises(files.UnsafeModel) as from_file:
        onnx_bcast.convert(path)
    with pytest.raises(files.UnsafeModel) as from_bytes:
        onnx_bcast.convert(data)
    assert str(from_file.value) == str(from_bytes.value).replace(f"the given bytes ({len(data)} bytes)", str(path))


def test_convert_signature_is_the_readme_s() -> None:
    import inspect

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    assert "`onnx_bcast.convert(model, *, opset=None, verify=False, feeds=None, guards=True)`" in readme
    params = list(inspect.signature(onnx_bcast.convert).parameters.values())
    assert [(p.name, p.kind.name, p.default) for p in params[1:]] == [
        ("opset", "KEYWORD_ONLY", None), ("verify", "KEYWORD_ONLY", False), ("feeds", "KEYWORD_ONLY", None),
        ("guards", "KEYWORD_ONLY", True)]


def test_shipped_code_cites_the_shipped_docs_not_the_spec() -> None:
    """SPEC.md is not shipped: docstrings and comments cite docs/ops.md, and the README, the changelog and docs/
    cite the docs (docs/ops.md once cited "SPEC §2")."""
    import re

    import onnx_bcast.converters
    import onnx_bcast.models

    folders = {Path(module.__file__).parent for module in (onnx_bcast, onnx_bcast.converters, onnx_bcast.models)}
    root = Path(__file__).resolve().parent.parent
    pages = [root / "README.md", root / "CHANGELOG.md", *sorted((root / "docs").glob("*.md"))]
    files = [path for folder in folders for path in sorted(folder.rglob("*.py"))] + pages
    cited = [f"{path}:{number}" for path in files
             for number, line in enumerate(path.read_text().splitlines(), 1) if re.search(r"\bSPEC\b", line)]
    assert cited == []
    assert "docs/ops.md" in onnx_bcast.convert.__doc__
