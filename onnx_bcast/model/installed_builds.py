"""Which distributions provide the modules onnx-bcast runs with (onnx-weekly for onnx, onnxruntime-gpu for
onnxruntime...), read from package metadata and the installed files: nothing is imported."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import metadata
from importlib.machinery import PathFinder
from pathlib import Path

#: the modules of ONNX Runtime plugin execution providers' wheels (onnxruntime_ep_openvino of Intel's
#: onnxruntime-ep-openvino, ...)
PLUGIN_MODULE = "onnxruntime_ep_"
#: the file every ONNX Runtime build writes with its own distribution name and version
_ORT_BUILD_INFO = Path("capi", "build_and_package_info.py")
_ORT_FIELD = re.compile(r"""^(package_name|__version__)\s*=\s*['"]([^'"]+)['"]""", re.MULTILINE)
_ONNX_VERSION = re.compile(r"""^version\s*=\s*['"]([^'"]+)['"]""", re.MULTILINE)


@dataclass(frozen=True)
class Build:
    """An installed distribution: its name as it was published, and its version."""

    name: str
    version: str

    def __str__(self) -> str:
        return f"{self.name} {self.version}"


def _writes(dist: metadata.Distribution, modules: Iterable[str]) -> set[str]:
    """Which of ``modules``, and which plugin-EP modules (``onnxruntime_ep_*``), the distribution installs: from its
    top_level.txt, else from its RECORD's paths (searched as text: a path object per file costs about 0.3 s over
    scipy's 7,000 files)."""
    listed = dist.read_text("top_level.txt")
    if listed:
        names = {line.strip() for line in listed.splitlines()}
        return {name for name in names if name in modules or name.startswith(PLUGIN_MODULE)}
    record = dist.read_text("RECORD") or ""
    found = {m for m in modules if record.startswith((f"{m}/", f"{m}.py,")) or f"\n{m}/" in record
             or f"\n{m}.py," in record}
    if PLUGIN_MODULE in record:
        found.update(re.findall(rf"^({PLUGIN_MODULE}\w+)/", record, re.MULTILINE))
    return found


def _distributions(path: Sequence[str] | None, **filters: str) -> Iterable[metadata.Distribution]:
    """The installed distributions, on ``path`` where given (default: ``sys.path``)."""
    return metadata.distributions(**filters, **({} if path is None else {"path": list(path)}))


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def providers_of(modules: Sequence[str], path: Sequence[str] | None = None) -> dict[str, list[Build]]:
    """For each top-level module, every installed distribution that writes it (two builds of ONNX Runtime write the
    same one), sorted by name, and under ``PLUGIN_MODULE`` every plugin-EP distribution; ``path``: where to look
    (default: ``sys.path``). One pass over the metadata; only the distributions found have theirs parsed."""
    found: dict[str, set[Build]] = {module: set() for module in (*modules, PLUGIN_MODULE)}
    for dist in _distributions(path):
        for module in _writes(dist, modules):
            key = PLUGIN_MODULE if module.startswith(PLUGIN_MODULE) and module not in modules else module
            found[key].add(Build(dist.metadata["Name"] or "?", dist.version))
    return {module: sorted(builds, key=lambda b: _canonical(b.name)) for module, builds in found.items()}


def _module_file(module: str, relative: Path, path: Sequence[str] | None) -> str | None:
    """The text of a file inside the installed package ``module`` (found as ``import`` would, not imported)."""
    spec = PathFinder.find_spec(module, None if path is None else list(path))
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        try:
            return (Path(folder) / relative).read_text(encoding="utf-8")
        except OSError:
            continue
    return None


def _on_disk(module: str, path: Sequence[str] | None) -> Build | None:
    """The build whose files ``import module`` loads, from the file it writes about itself: ONNX Runtime's
    ``capi/build_and_package_info.py`` (its distribution name and version), onnx's ``version.py`` (its version)."""
    if module == "onnxruntime":
        text = _module_file(module, _ORT_BUILD_INFO, path)
        fields = dict(_ORT_FIELD.findall(text or ""))
        if "package_name" in fields and "__version__" in fields:
            return Build(fields["package_name"], fields["__version__"])
    elif module == "onnx":
        match = _ONNX_VERSION.search(_module_file(module, Path("version.py"), path) or "")
        if match:
            return Build("", match.group(1))
    return None


def module_build(module: str, builds: list[Build], path: Sequence[str] | None = None) -> str:
    """``name version`` of the distribution (of ``builds``, those that write ``module``) whose files ``import``
    loads; where several wrote the module, the others follow; ``module not installed`` where none did."""
    if not builds:
        return f"{module} not installed"
    if len(builds) == 1:
        return str(builds[0])
    disk = _on_disk(module, path)
    loaded = [b for b in builds if disk is not None and b.version == disk.version
              and (not disk.name or _canonical(b.name) == _canonical(disk.name))]
    if len(loaded) == 1:
        others = ", ".join(str(b) for b in builds if b != loaded[0])
        return f"{loaded[0]} (over {others}: one build of {module} overwrote another's files)"
    return " + ".join(map(str, builds)) + f" (several builds of {module}: reinstall one)"


def version_of(distribution: str, path: Sequence[str] | None = None) -> str:
    """``name version`` of one distribution, or ``name not installed``."""
    for dist in _distributions(path, name=distribution):
        return f"{distribution} {dist.version}"
    return f"{distribution} not installed"


def runtime_versions(path: Sequence[str] | None = None) -> list[str]:
    """What ``--version`` names beside onnx-bcast: the builds of onnx and of ONNX Runtime (with its plugin
    execution providers), then onnxruntime-extensions, numpy and openvino."""
    providers = providers_of(("onnx", "onnxruntime"), path)
    runtime = module_build("onnxruntime", providers["onnxruntime"], path)
    plugins = providers[PLUGIN_MODULE]
    if plugins:
        runtime += " with " + ", ".join(map(str, plugins))
    return [module_build("onnx", providers["onnx"], path), runtime,
            *(version_of(name, path) for name in ("onnxruntime-extensions", "numpy", "openvino"))]


def plugin_modules(path: Sequence[str] | None = None) -> list[str]:
    """The modules of the installed plugin-EP wheels (``onnxruntime_ep_*``), sorted."""
    found: set[str] = set()
    for dist in _distributions(path):
        found.update(m for m in _writes(dist, ()) if m.startswith(PLUGIN_MODULE))
    return sorted(found)
