"""ONNX Runtime sessions for models that use onnx_bcast ops."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
from onnx import ModelProto

from onnx_bcast.converters import STANDARD
from onnx_bcast.errors import BroadcastError, NotLowerable, fmt_shape
from onnx_bcast.importers.legacy_onnx import imported_if_legacy
from onnx_bcast.lowering.declaring import declare, node_label
from onnx_bcast.lowering.engine import lower
from onnx_bcast.model import external_data
from onnx_bcast.model.files import load_model
from onnx_bcast.model.ort_import import onnxruntime
from onnx_bcast.model.walk import node_lists
from onnx_bcast.onnx_defs import schemas
from onnx_bcast.ops.common import MAX_RANK, NUMPY_MAX_DIMS
from onnx_bcast.ort import kernels
from onnx_bcast.ort.prechecked import Prechecked
from onnx_bcast.ort.prepare import prepare
from onnx_bcast.ort.process_state import take_error
from onnx_bcast.ort.providers import CPU, Provider, check_used, choose
from onnx_bcast.ort.run_failures import failed_guard, failed_node, guard_error, recorded_error

ort = onnxruntime()
logger = logging.getLogger("onnx_bcast.ort.session")


def session_options(options: ort.SessionOptions | None = None) -> ort.SessionOptions:
    """Session options with onnxruntime-extensions and our ops registered (a new object when None)."""
    options = options if options is not None else ort.SessionOptions()
    options.register_custom_ops_library(kernels.library_path())
    return options


class InferenceSession(ort.InferenceSession):
    """An ``onnxruntime.InferenceSession`` for models with onnx_bcast ops; bad runtime input raises
    ``BroadcastError`` from ``run`` and leaves the session usable.

    ``backend="numpy"`` (the default) runs our ops as onnxruntime-extensions Python ops on numpy kernels;
    ``backend="native"`` runs the guarded standard lowering (``converters.STANDARD``) in plain ONNX Runtime, with no
    Python in the run loop. Both raise the same ``BroadcastError``: when a native guard fails, the numpy backend runs
    the same inputs once to say exactly what was wrong.
    """

    def __init__(self, model: str | os.PathLike | bytes | ModelProto, sess_options: ort.SessionOptions | None = None,
                 providers: Sequence[Provider] | None = None, *, backend: str = "numpy",
                 max_output_bytes: int | None = None, ep_libraries: Sequence[str | os.PathLike] = (),
                 **kwargs: Any) -> None:
        """``max_output_bytes`` limits every broadcast output of this session (default: the environment's
        ``ONNX_BCAST_MAX_OUTPUT_BYTES``, else half of the machine's memory; the numpy backend only).

        ``providers`` as ONNX Runtime takes them (default: the CPU); a plugin EP is named like any other, and its
        library is registered from ``ep_libraries`` (paths, or modules with ``get_library_path()``) or from an
        installed ``onnxruntime_ep_*`` wheel (``ort.providers.choose``). An unknown name raises
        ``ort.providers.ProviderError`` (a ValueError) naming the available ones; a provider ONNX Runtime did not
        use, ValueError."""
        if backend not in ("numpy", "native"):
            raise ValueError(f"backend must be 'numpy' or 'native', got {backend!r}")
        schemas.register()
        self.backend = backend
        # a legacy model (default-domain opset 1-6) runs as imported; its errors name the legacy nodes
        self.source_model, self._legacy = imported_if_legacy(load_model(model))
        self._max_output_bytes = max_output_bytes
        self._explainer: InferenceSession | None = None
        # backend 'native' whose runs all fail: why; the numpy backend runs only to raise its error, never a value
        self._every_input_fails: str | None = None
        self._labels: set[str] | None = None
        self._prechecked: Prechecked | None = None  # backend 'native': the unguarded form, for inputs proven valid
        options = sess_options
        if options is None:
            options = ort.SessionOptions()
            options.log_severity_level = 4  # a failed run is raised as a Python error, not also logged by ORT
        requested = list(providers or [])
        providers = choose(requested, options, ep_libraries)
        if backend == "native":
            try:
                self.prepared_model = lower(self.source_model, STANDARD).model
            except NotLowerable as err:  # a limit of the lowering, not of the inputs: no Python kernel runs instead
                raise NotLowerable(err.op, err.mode, f"{err.detail} (backend 'native' runs the model as standard "
                                   "ONNX only; backend 'numpy' runs this node)", err.node, err.mode_attr) from None
            except BroadcastError as err:
                # the converter proves from ranks alone that every input fails: the numpy backend, if it can
                # make a session, fails each run with the message it gives (else its error is raised here)
                self._every_input_fails = f"the lowering proved that every input fails ({err})"
                self.backend = "numpy"
                self.prepared_model = prepare(self.source_model, quiet=True, max_output_bytes=max_output_bytes,
                                              direct_outputs=True)
                self._load(session_options(options), providers, requested, **kwargs)
                return
            try:
                self._load(options, providers, requested, **kwargs)
                self._prechecked = Prechecked.build(self.source_model, self.prepared_model, options,
                                                    self.get_providers(), **kwargs)
                return
            except Exception as exc:
                node = failed_node(exc)
                if node is None or self._our_label(node) is None:
                    raise
                # ORT folded one of our checks to a constant failure: every input fails. The numpy backend runs
                # instead, so that each run raises the same error the numpy backend gives (never a value).
                logger.debug("native form refused when loaded (%s); running the numpy backend", exc)
                self._every_input_fails = f"ONNX Runtime refused the standard form of node '{node}' ({exc})"
                self.backend = "numpy"
        self.prepared_model = prepare(self.source_model, quiet=True, max_output_bytes=max_output_bytes,
                                      direct_outputs=True)
        try:
            self._load(session_options(options), providers, requested, **kwargs)
        except Exception as err:
            if isinstance(err, ValueError) or all(_name(p) == CPU for p in requested):
                raise
            raise RuntimeError(f"{err}\n(backend 'numpy' runs our ops as Python kernels on the CPU between the "
                               "provider's nodes; backend 'native' gives the provider the whole model)") from err

    def _load(self, options: ort.SessionOptions, providers: list[Provider] | None, requested: list[Provider],
              **kwargs: Any) -> None:
        """ONNX Runtime's session of ``prepared_model``, which reads (memory-maps) its external data itself: the
        weights never pass through Python (``external_data.ort_session``); an error unless it uses every
        ``requested`` provider."""
        external_data.ort_session(lambda source, opts: super(InferenceSession, self).__init__(
            source, sess_options=opts, providers=providers, **kwargs), self.prepared_model, options)
        check_used(requested, self.get_providers())

    def run(self, output_names: list[str] | None, input_feed: dict[str, Any], run_options: Any = None) -> list[Any]:
        """Like ``onnxruntime.InferenceSession.run``; an invalid broadcast raises ``BroadcastError``."""
        try:
            return self._run(output_names, input_feed, run_options)
        except BroadcastError as err:
            if self._legacy is None:
                raise
            raise self._legacy.explain(err) from None

    def _run(self, output_names: list[str] | None, input_feed: dict[str, Any], run_options: Any) -> list[Any]:
        if self._every_input_fails is not None:
            self._run_numpy(output_names, input_feed, run_options)
            raise RuntimeError(f"backend 'native' cannot run this model: {self._every_input_fails}, yet the numpy "
                               "backend computed outputs, which backend 'native' does not hand back (backend 'numpy' "
                               "runs it)")
        if self.backend == "native":
            if self._prechecked is not None:
                outputs = self._prechecked.run(output_names, input_feed, run_options)
                if outputs is not None:
                    return outputs
            try:
                return super().run(output_names, input_feed, run_options)
            except Exception as exc:
                wide = self._wide_output(exc, output_names, input_feed, run_options)
                if wide is not None:
                    raise wide from None
                node = failed_node(exc)
                label = self._our_label(node) if node is not None else None
                explained = self._explain(label, failed_guard(exc), input_feed)
                if explained is None:
                    raise
                raise explained from None
        return self._run_numpy(output_names, input_feed, run_options)

    def _run_numpy(self, output_names: list[str] | None, input_feed: dict[str, Any], run_options: Any) -> list[Any]:
        """A run of the numpy backend's session (our ops as Python kernels): a kernel's error is raised."""
        run_state = kernels.guarded_run
        run_state.active, run_state.error_id = True, None
        try:
            outputs = super().run(output_names, input_feed, run_options)
            if run_state.error_id is not None:  # a kernel failed, yet the run did not: never hand its stand-in back
                recorded = take_error(run_state.error_id)
                if recorded is not None:
                    raise recorded
            return outputs
        except BroadcastError:
            raise
        except Exception as exc:
            recorded = recorded_error(exc, kernels.guarded_run.error_id)
            if recorded is None:
                recorded = self._wide_output(exc, output_names, input_feed, run_options)
            if recorded is None:
                guard = failed_guard(exc)  # a check in standard ops before a kernel (e.g. rank at most 64)
                if guard is None:
                    raise
                recorded = guard_error(self.source_model, *guard, input_feed)
            raise recorded from None
        finally:
            run_state.active, run_state.error_id = False, None

    def _wide_output(self, exc: BaseException, output_names: list[str] | None, input_feed: dict[str, Any],
                     run_options: Any) -> BroadcastError | None:
        """With numpy 1, an output of more than 32 dims, which ONNX Runtime computed but cannot hand back as an
        array (a ValueError): a BroadcastError naming the output and the node that made it; else None.

        The run is repeated keeping the outputs as ``OrtValue``s, whose shapes say which output it is (no error
        text is read); only after a failed run, and only with numpy 1."""
        if NUMPY_MAX_DIMS >= MAX_RANK or type(exc) is not ValueError:
            return None
        try:
            feeds = {name: value if isinstance(value, ort.OrtValue) else
                     ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(value))
                     for name, value in input_feed.items()}
            names = output_names or [meta.name for meta in self.get_outputs()]
            values = super().run_with_ort_values(names, feeds, run_options)
        except Exception:
            return None
        for name, value in zip(names, values, strict=True):
            shape = tuple(value.shape()) if value.is_tensor() else ()
            if NUMPY_MAX_DIMS < len(shape) <= MAX_RANK:  # over 64 is no numpy's: the rules' errors say why
                return self._output_error(name, shape)
        return None

    def _output_error(self, output: str, shape: tuple[int, ...]) -> BroadcastError:
        """The BroadcastError of a model output too wide for numpy 1, naming the node that made it."""
        rank = len(shape)
        detail = (f"output '{output}' rank {rank}: numpy 1 holds at most {NUMPY_MAX_DIMS} dims; numpy 2 needed for "
                  f"rank {rank}; output '{output}' {fmt_shape(shape)}")
        for index, node in enumerate(self.source_model.graph.node):
            if output in node.output:
                if node.domain == schemas.DOMAIN:
                    return declare(node, index).fail(detail)
                return BroadcastError(node.op_type, "", detail, node_label(node, index))
        return BroadcastError(schemas.DOMAIN, "", detail)

    def _our_label(self, node: str) -> str | None:
        """The label of our node whose rewrite holds the ORT node ``node`` (its name, or ``<label>/...``)."""
        if self._labels is None:
            self._labels = {node_label(n, i) for entry in node_lists(self.source_model)
                            for i, n in enumerate(entry.container.node) if n.domain == schemas.DOMAIN}
        head = node.split("/", 1)[0]
        return node if node in self._labels else head if head in self._labels else None

    def _explain(self, label: str | None, guard: tuple[str, str] | None, input_feed: dict[str, Any]
                 ) -> BroadcastError | None:
        """The numpy backend's error on the same inputs (the same message); else, for a failure at one of our
        nodes (``label``), its guard's rule; else None (a failure that is not ours: raised as it is).

        Any failed run is asked about, not only those at nodes named after ours: ORT may run a standard op's
        function body (e.g. ``LessOrEqual`` of float16), whose nodes have no name to trace back.
        """
        if self._explainer is None:
            self._explainer = InferenceSession(self.source_model, backend="numpy",
                                               max_output_bytes=self._max_output_bytes)
        try:
            self._explainer.run(None, input_feed)
        except BroadcastError as err:
            return err
        except Exception:  # the numpy backend fails otherwise too: not a broadcast error
            return None
        if label is None:
            return None
        return guard_error(self.source_model, *(guard or (label, "the standard form failed")), input_feed)


def _name(provider: Provider) -> str:
    return provider[0] if isinstance(provider, tuple) else provider
