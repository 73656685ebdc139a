"""Execution providers: passed through to ONNX Runtime, unknown names refused naming the available ones, plugin EP
libraries registered once and added by device (a fake ONNX Runtime for the rules; Intel's OpenVINO plugin where it
is installed, as in .ci/run's step for it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnx_bcast
from onnx_bcast.ort import providers

ort = pytest.importorskip("onnxruntime")


def _explicit_model() -> onnx.ModelProto:
    """Broadcast(mode=explicit) of x (3,) to (2, 3, 4) along axis 1."""
    node = helper.make_node("Broadcast", ["x", "t", "a"], ["y"], domain="onnx_bcast", mode="explicit")
    graph = helper.make_graph([node], "explicit", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializer=[numpy_helper.from_array(np.array([2, 3, 4], np.int64), "t"),
                                           numpy_helper.from_array(np.array([1], np.int64), "a")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("onnx_bcast", 1)],
                             ir_version=10)


X = np.array([1.5, -2.0, 3.25], np.float32)
EXPECTED = np.broadcast_to(X[None, :, None], (2, 3, 4))


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """No provider list taken and no library registered yet in this test."""
    monkeypatch.setattr(providers, "_builtin", None)
    monkeypatch.setattr(providers, "_registered", {})


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_providers_pass_through(backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    given: list[Any] = []
    plain_init = ort.InferenceSession.__init__

    def spy(self: Any, *args: Any, **kwargs: Any) -> None:
        given.append(kwargs.get("providers"))
        plain_init(self, *args, **kwargs)

    monkeypatch.setattr(ort.InferenceSession, "__init__", spy)
    requested = [("CPUExecutionProvider", {"arena_extend_strategy": "kSameAsRequested"})]
    session = onnx_bcast.InferenceSession(_explicit_model(), providers=requested, backend=backend)
    assert given == [requested] and session.get_providers() == ["CPUExecutionProvider"]
    np.testing.assert_array_equal(session.run(None, {"x": X})[0], EXPECTED)


def test_an_unknown_provider_names_the_available_ones() -> None:
    with pytest.raises(providers.ProviderError) as err:
        onnx_bcast.InferenceSession(_explicit_model(), providers=["NoSuchExecutionProvider", "CPUExecutionProvider"])
    text = str(err.value)
    assert text.startswith("unknown execution provider 'NoSuchExecutionProvider'; available: ")
    assert all(name in text for name in ort.get_available_providers())  # ORT itself only warns, and runs on CPU


def test_a_provider_onnx_runtime_does_not_use_is_an_error(monkeypatch: pytest.MonkeyPatch, fresh: None) -> None:
    """ONNX Runtime drops a provider it cannot make (CUDA without a GPU) and runs on the CPU: not silently here."""
    monkeypatch.setattr(providers, "_builtin", [*ort.get_available_providers(), "CUDAExecutionProvider"])
    if "CUDAExecutionProvider" in ort.get_available_providers():
        pytest.skip("this build has CUDA")
    with pytest.raises(ValueError, match="CUDAExecutionProvider was requested but ONNX Runtime did not use it"):
        with pytest.warns(UserWarning):
            onnx_bcast.InferenceSession(_explicit_model(), providers=["CUDAExecutionProvider", "CPUExecutionProvider"])


def test_a_missing_library_is_named(tmp_path: Path) -> None:
    with pytest.raises(providers.ProviderError, match="no_such_lib.so': no such file"):
        onnx_bcast.InferenceSession(_explicit_model(), ep_libraries=[str(tmp_path / "no_such_lib.so")])


def test_an_onnx_runtime_without_plugin_eps_is_named(tmp_path: Path) -> None:
    """ONNX Runtime before 1.23 has no ``register_execution_provider_library``: the error says which version can."""
    if hasattr(ort, "register_execution_provider_library"):
        pytest.skip(f"onnxruntime {ort.__version__} loads plugin EPs (this checks the declared minimum's message)")
    library = tmp_path / "plugin.so"
    library.write_bytes(b"")
    with pytest.raises(providers.ProviderError, match=r"onnxruntime 1\.\d+\.\d+ cannot load plugin .*>= 1\.23"):
        onnx_bcast.InferenceSession(_explicit_model(), ep_libraries=[str(library)])


class _FakeOrt:
    """The parts of ONNX Runtime >= 1.23 that plugin EPs use, with one plugin library offering 'PluginEP'."""

    def __init__(self) -> None:
        self.registered: list[tuple[str, str]] = []

    def get_available_providers(self) -> list[str]:
        return ["CUDAExecutionProvider", "CPUExecutionProvider", *(["PluginEP"] if self.registered else [])]

    def get_ep_devices(self) -> list[Any]:
        cpu = SimpleNamespace(ep_name="CPUExecutionProvider", device=SimpleNamespace(type="CPU"))
        plugin = [SimpleNamespace(ep_name="PluginEP", device=SimpleNamespace(type=kind), ep_metadata={})
                  for kind in ("NPU", "CPU")]
        return [cpu, *(plugin if self.registered else [])]

    def register_execution_provider_library(self, name: str, path: str) -> None:
        if any(path == p for _, p in self.registered):
            raise RuntimeError("already registered")
        self.registered.append((name, path))


class _Options:
    def __init__(self) -> None:
        self.added: list[tuple[list[Any], dict[str, str]]] = []

    def add_provider_for_devices(self, devices: list[Any], options: dict[str, str]) -> None:
        self.added.append((devices, options))


def test_a_plugin_library_is_registered_once_and_added_by_device(monkeypatch: pytest.MonkeyPatch, fresh: None,
                                                                  tmp_path: Path) -> None:
    fake = _FakeOrt()
    monkeypatch.setattr(providers, "onnxruntime", lambda: fake)
    monkeypatch.setattr(providers, "_installed_plugins", dict)  # no plugin wheel offers more
    library = tmp_path / "libplugin.so"
    library.write_bytes(b"")
    options = _Options()
    # the build lists the plugin after registration, but takes it by name without a word: by device here
    assert providers.choose(["PluginEP", ("CPUExecutionProvider")], options, [str(library)]) is None
    assert fake.registered == [("onnx_bcast_0_libplugin", str(library.resolve()))]
    assert [(d[0].device.type, o) for d, o in options.added] == [("NPU", {})]  # the first device ORT lists
    again = _Options()
    assert providers.choose([("PluginEP", {"k": 1})], again, [str(library)]) is None  # not registered twice
    assert len(fake.registered) == 1 and again.added[0][1] == {"k": "1"}
    # the build's own providers go by name
    assert providers.choose(["CUDAExecutionProvider", "CPUExecutionProvider"], _Options()) == [
        "CUDAExecutionProvider", "CPUExecutionProvider"]
    with pytest.raises(providers.ProviderError, match="plugin EP PluginEP and CUDAExecutionProvider cannot run one"):
        providers.choose(["PluginEP", "CUDAExecutionProvider"], _Options())
    with pytest.raises(providers.ProviderError, match="'Other'; available: CUDAExecutionProvider, "
                                                      "CPUExecutionProvider, PluginEP$"):
        providers.choose(["Other"], _Options())


def test_an_installed_plugin_wheel_is_found_by_the_name_it_offers(monkeypatch: pytest.MonkeyPatch, fresh: None,
                                                                   tmp_path: Path) -> None:
    fake = _FakeOrt()
    monkeypatch.setattr(providers, "onnxruntime", lambda: fake)
    library = tmp_path / "libplugin.so"
    library.write_bytes(b"")
    module = tmp_path / "onnxruntime_ep_fake"
    module.mkdir()
    (module / "__init__.py").write_text(f"def get_library_path():\n    return {str(library)!r}\n\n"
                                        "def get_ep_names():\n    return ['PluginEP']\n")
    info = tmp_path / "onnxruntime_ep_fake-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: onnxruntime-ep-fake\nVersion: 1.0\n")
    (info / "top_level.txt").write_text("onnxruntime_ep_fake\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    options = _Options()
    assert providers.choose(["PluginEP"], options) is None
    assert fake.registered == [("onnx_bcast_0_libplugin", str(library.resolve()))] and len(options.added) == 1


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "onnx_bcast", *args], capture_output=True, text=True, timeout=300)


def test_the_command_line_refuses_an_unknown_provider_as_bad_usage(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(_explicit_model(), path)
    run = _cli("run", str(path), "--providers", "NoSuchExecutionProvider,CPUExecutionProvider")
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.splitlines() == [run.stderr.strip()], run.stderr  # one line
    assert run.stderr.startswith("onnx-bcast run: argument --providers: unknown execution provider "
                                 "'NoSuchExecutionProvider'; available: ") and "CPUExecutionProvider" in run.stderr
    out = tmp_path / "out.onnx"
    convert = _cli("convert", str(path), "-o", str(out), "--verify", "--providers", "NoSuchExecutionProvider")
    assert convert.returncode == 2 and not out.exists(), convert.stderr
    assert convert.stderr.startswith("onnx-bcast convert: argument --providers: unknown execution provider")
    good = _cli("convert", str(path), "-o", str(out), "--verify", "--providers", "CPUExecutionProvider")
    assert good.returncode == 0 and out.exists(), good.stderr


def test_the_openvino_plugin_runs_the_native_backend(fresh: None) -> None:
    """Intel's plugin wheel (installed by .ci/run's step for it): every node of the guarded lowering on OpenVINO,
    found from the installed wheel by the name it offers."""
    pytest.importorskip("onnxruntime_ep_openvino")
    options = ort.SessionOptions()
    options.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    session = onnx_bcast.InferenceSession(_explicit_model(), options, backend="native",
                                          providers=["OpenVINOExecutionProvider", "CPUExecutionProvider"])
    assert session.get_providers() == ["OpenVINOExecutionProvider", "CPUExecutionProvider"]
    np.testing.assert_array_equal(session.run(None, {"x": X})[0], EXPECTED)
    placed = {graph.ep_name for graph in session.get_provider_graph_assignment_info()}
    assert placed == {"OpenVINOExecutionProvider"}
