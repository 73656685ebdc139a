"""Execution providers for our sessions: the build's own by name, plugin EPs (ONNX Runtime >= 1.23) by their devices.

ONNX Runtime takes its built-in providers as a list of names. A plugin EP (a shared library such as Intel's
``onnxruntime-ep-openvino`` wheel ships) is registered with ``onnxruntime.register_execution_provider_library`` and
then added to the session options through its devices (``SessionOptions.add_provider_for_devices``): given by name
in the providers list it is ignored without a word (ONNX Runtime 1.32 lists it as available, then runs on the CPU).
Here a requested name that is not one of the build's own is looked up among the registered plugin EPs, after
registering the libraries the caller gave and those of installed plugin wheels (modules ``onnxruntime_ep_*`` with
``get_library_path()`` and ``get_ep_names()``, as Intel's has); an unknown name is an error naming the available
ones (ONNX Runtime itself only warns, and runs without it).
"""

from __future__ import annotations

import importlib
import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from onnx_bcast.model.ort_import import onnxruntime

logger = logging.getLogger("onnx_bcast.ort.providers")

CPU = "CPUExecutionProvider"
#: what a plugin EP gets where the caller gives no options: OpenVINO's CPU plugin in float32, as the model says (it
#: computes float32 ops in bfloat16 on CPUs that have it; ``--runtime openvino`` sets the same)
DEFAULT_PLUGIN_OPTIONS = {"OpenVINOExecutionProvider": {
    "load_config": json.dumps({"CPU": {"INFERENCE_PRECISION_HINT": "f32"}})}}

Provider = str | tuple[str, dict[str, Any]]

_builtin: list[str] | None = None  # the build's own providers, before any library was registered here
_registered: dict[str, str] = {}  # library path -> registration name, in this process


class ProviderError(ValueError):
    """Execution providers that cannot be had as asked (a usage error): a name neither the build nor any plugin EP
    library offers, a library that cannot be registered, a plugin EP listed with another of the build's own."""


def builtin_providers() -> list[str]:
    """The providers of the installed ONNX Runtime build itself, as it listed them before this module registered
    any library (ONNX Runtime 1.32 lists registered plugin EPs too, which it cannot take by name)."""
    global _builtin
    if _builtin is None:
        _builtin = list(onnxruntime().get_available_providers())
    return _builtin


def _plugin_devices() -> dict[str, list[Any]]:
    """The devices of every registered plugin EP, by EP name (none before ONNX Runtime 1.23)."""
    ort = onnxruntime()
    builtin = set(builtin_providers())
    devices: dict[str, list[Any]] = {}
    for device in getattr(ort, "get_ep_devices", list)():
        if device.ep_name not in builtin:
            devices.setdefault(device.ep_name, []).append(device)
    return devices


def _library_path(library: str | os.PathLike) -> str:
    """A plugin EP library's file: the path given, or ``get_library_path()`` of the installed module named so."""
    path = Path(library)
    if path.is_file():
        return str(path.resolve())
    name = str(library)
    if name.isidentifier():
        try:
            module = importlib.import_module(name)
        except ImportError as err:
            raise ProviderError(f"plugin EP library {name!r}: no such file, and no module of that name ({err})"
                                  ) from err
        if callable(getattr(module, "get_library_path", None)):
            return str(Path(module.get_library_path()).resolve())
        raise ProviderError(f"plugin EP library {name!r}: module {module.__name__} has no get_library_path()")
    raise ProviderError(f"plugin EP library {name!r}: no such file")


def register_library(library: str | os.PathLike) -> str:
    """Register a plugin EP library with ONNX Runtime once per process (by its resolved path); its path."""
    path = _library_path(library)  # a missing file is named first, whatever ONNX Runtime is installed
    ort = onnxruntime()
    if not hasattr(ort, "register_execution_provider_library"):
        raise ProviderError(f"plugin EP library {path!r}: onnxruntime {ort.__version__} cannot load plugin "
                              "execution providers (onnxruntime >= 1.23 can)")
    if path not in _registered:
        builtin_providers()  # before the first registration
        name = f"onnx_bcast_{len(_registered)}_{Path(path).stem}"
        try:
            ort.register_execution_provider_library(name, path)
        except Exception as err:  # ORT's Fail: a library it cannot load, or one registered under this name
            raise ProviderError(f"plugin EP library {path}: ONNX Runtime cannot register it ({err})") from err
        _registered[path] = name
        logger.info("registered plugin EP library %s", path)
    return path


def _installed_plugins() -> dict[str, str]:
    """The EP names the installed plugin wheels offer (module ``onnxruntime_ep_*``), each with its module."""
    from onnx_bcast.model.installed_builds import plugin_modules

    offered: dict[str, str] = {}
    for module_name in plugin_modules():
        try:
            module = importlib.import_module(module_name)
            names = module.get_ep_names() if hasattr(module, "get_ep_names") else [module.get_ep_name()]
        except Exception as err:  # noqa: BLE001 - a broken wheel offers nothing; the error lists what is there
            logger.info("plugin EP module %s offers nothing: %s", module_name, err)
            continue
        for name in names:
            offered.setdefault(str(name), module_name)
    return offered


def _split(provider: Provider) -> tuple[str, dict[str, Any] | None]:
    if isinstance(provider, tuple):
        return provider[0], dict(provider[1])
    return provider, None


def resolve(providers: Sequence[Provider] | None, ep_libraries: Sequence[str | os.PathLike] = ()
            ) -> tuple[list[tuple[str, dict[str, Any] | None]], dict[str, list[Any]]]:
    """The requested providers as (name, options) pairs (default: the CPU's) and the devices of those that are
    plugin EPs, after registering ``ep_libraries`` (paths, or installed modules with ``get_library_path()``) and,
    for a name nothing offers yet, the installed plugin wheel that offers it. Raises ``ProviderError`` naming the
    available providers for a name nothing offers, and for a plugin EP listed with another of the build's providers
    than the CPU's (ONNX Runtime takes either names or devices for one session)."""
    for library in ep_libraries:
        register_library(library)
    requested = [_split(p) for p in providers or [CPU]]
    builtin = builtin_providers()
    devices = _plugin_devices()
    missing = [name for name, _ in requested if name not in builtin and name not in devices]
    if missing:
        offered = _installed_plugins()
        for name in missing:
            if name in offered:
                register_library(offered[name])
        devices = _plugin_devices()
        unknown = [name for name in missing if name not in devices]
        if unknown:
            available = [*builtin, *devices, *(n for n in offered if n not in devices and n not in builtin)]
            raise ProviderError(f"unknown execution provider {unknown[0]!r}; available: {', '.join(available)}")
    plugins = {name: devices[name] for name, _ in requested if name in devices}
    others = [name for name, _ in requested if name in builtin and name != CPU]
    if plugins and others:
        raise ProviderError(f"plugin EP {next(iter(plugins))} and {others[0]} cannot run one session (ONNX Runtime "
                            "takes the build's own providers by name and plugin EPs by device, not both)")
    return requested, plugins


def choose(providers: Sequence[Provider] | None, options: Any, ep_libraries: Sequence[str | os.PathLike] = ()
           ) -> list[Provider] | None:
    """What to give ONNX Runtime as ``providers`` for a session with ``options`` (``resolve`` says what is taken):
    the list of names, or None where plugin EPs were added to ``options`` through their first device (the CPU
    provider then comes last by itself; a plugin EP without options gets ``DEFAULT_PLUGIN_OPTIONS``)."""
    requested, plugins = resolve(providers, ep_libraries)
    if not plugins:
        return [name if opts is None else (name, opts) for name, opts in requested]
    for name, opts in requested:
        if name in plugins:
            device = plugins[name][0]
            chosen = DEFAULT_PLUGIN_OPTIONS.get(name, {}) if opts is None else opts
            options.add_provider_for_devices([device], {key: str(value) for key, value in chosen.items()})
            logger.info("%s on its %s device (options %s)", name, device.device.type, chosen)
    return None


def check_used(requested: Sequence[Provider] | None, used: Sequence[str]) -> None:
    """Raise unless the session uses every requested provider (ONNX Runtime falls back to the CPU when it cannot
    make one, e.g. CUDA without a GPU, with a warning at most)."""
    for name, _ in (_split(p) for p in requested or []):
        if name not in used:
            raise ValueError(f"execution provider {name} was requested but ONNX Runtime did not use it "
                             f"(the session has {', '.join(used)}); see ONNX Runtime's log for why")
