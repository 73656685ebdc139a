"""Registration of our kernels as onnxruntime-extensions Python ops, derived from the op table, once per process.

Two forms of each op spec are registered:
* the public op (domain ``onnx_bcast``), registered only so that plain ORT refuses a spec-form model when the
  session is made, with a message naming ``REFUSAL_ATTR`` (run ``prepare`` first), instead of handing back an
  empty tensor for invalid input.
* the guarded op (domain ``onnx_bcast.ort``) of every op whose Python kernel moves the data, which
  ``onnx_bcast.prepare`` emits: a second output, the status, feeds a ``Reshape`` of a one-element constant beside
  the data path (so the data is never copied again). The status is ``[1]`` on success. When the kernel fails it
  records the error, returns an empty tensor and the status ``[2, error_id]``, which cannot reshape one element,
  so ORT fails the run cleanly (a Python exception, never an abort) and ``InferenceSession`` turns it back into
  the recorded error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from onnx_bcast.model.ort_import import extensions
from onnx_bcast.onnx_defs.schemas import BROADCAST_CHECK, DOMAIN, ELEMENTWISE_CHECK, GUARDED_DOMAIN, RANK_CHECK
from onnx_bcast.ops import OP_SPECS
from onnx_bcast.ops.common import OpSpec, shape_stand_in
from onnx_bcast.ort import bridge
from onnx_bcast.ort.bridge_types import BRIDGE_TYPE, bridge_signatures
from onnx_bcast.ort.bridge_types import bridge_types as bridge_types
from onnx_bcast.ort.bridge_types import elementwise_bridge_types as elementwise_bridge_types
from onnx_bcast.ort.kernel_errors import ERROR_SHAPE_MARK as ERROR_SHAPE_MARK
from onnx_bcast.ort.kernel_errors import failure_shape as failure_shape
from onnx_bcast.ort.kernel_errors import guarded_run as guarded_run
from onnx_bcast.ort.kernel_errors import output_limit, record
from onnx_bcast.ort.kernel_plans import PLANS_PER_NODE, input_signature, output_plan
from onnx_bcast.ort.process_state import state
from onnx_bcast.ort.shape_checks import broadcast_check, elementwise_check, rank_check

PyCustomOpDef, get_library_path = extensions().PyCustomOpDef, extensions().get_library_path
# A spec-form node in plain ORT could not fail a run cleanly (an exception in the bridge aborts the process), so it
# would hand back an empty tensor on invalid input. Its registration requires this attribute, which no model has:
# ORT refuses such a model when the session is made, quoting the name, which says what to do instead.
REFUSAL_ATTR = "run_onnx_bcast_prepare_on_this_model_first"

_I64 = PyCustomOpDef.dt_int64
_ATTR_KIND = {"string": PyCustomOpDef.dt_string, "int": PyCustomOpDef.dt_int64}  # list attributes are not carried
_GUARD_ATTRS = {"op": PyCustomOpDef.dt_string, "node": PyCustomOpDef.dt_string, "quiet": _I64,
                "max_output_bytes": _I64}  # quiet=1: the caller raises the error; -1: the default limit


def _bridge_attrs(spec: OpSpec) -> dict[str, int]:
    return {a.name: _ATTR_KIND[a.kind] for a in spec.attrs if a.kind in _ATTR_KIND}


def _kernel(spec: OpSpec, guarded: bool, empty_dtype: Callable[[np.ndarray], Any]) -> Callable[..., Any]:
    shape_only = [i for i, formal in enumerate(spec.inputs) if formal.shape_only]
    several = len(spec.outputs) > 1
    # a broadcast's output is a view of its data set by the input signature: validated once per signature and node
    planned = guarded and spec.family == "broadcast" and not several

    def kernel(inputs: list[np.ndarray], attrs: dict[str, Any]) -> Any:
        memo = getattr(attrs, "memo", None) if planned else None  # the bridge's per-node attributes carry it
        if memo is not None:
            data = inputs[0]
            key = input_signature(inputs, attrs)
            plan = memo.get(key)
            if plan is not None and data.flags.c_contiguous:
                index = plan[3]
                if index is not None:
                    return (data if data.ndim == 1 else data.reshape(-1))[index], plan[2]
                return np.ndarray(plan[0], data.dtype, data, 0, plan[1]), plan[2]
        try:
            values: Any = inputs
            if shape_only:  # the guarded form passes Shape(input): a zero-copy stand-in of that shape
                values = list(inputs)
                for i in shape_only:  # numpy makes no stand-in past 64 dims (numpy 1: 32): said as every rule does
                    values[i] = shape_stand_in(spec.name, str(spec.mode_of(attrs)), spec.inputs[i].name,
                                               tuple(int(d) for d in inputs[i].tolist()), mode_attr=spec.mode_attr)
            out = spec.kernel(values, attrs, output_limit(attrs))
        except BaseException as exc:  # an exception here would abort the process: never let one through
            error_id = record(spec.name, str(spec.mode_of(attrs)), attrs, exc, spec.mode_attr)
            empties = (np.zeros((0,), dtype=empty_dtype(inputs[0])),) * len(spec.outputs)
            if guarded:  # each output's status: a shape its empty stand-in cannot take
                return (*empties, *[np.array([ERROR_SHAPE_MARK, error_id], dtype=np.int64)] * len(empties))
            return empties if several else empties[0]
        if memo is not None:
            plan = output_plan(inputs[0], out)
            if plan is not None:
                if len(memo) >= PLANS_PER_NODE:
                    memo.clear()
                memo[key] = plan
                return out, plan[2]
        if guarded:  # each output's status: its own shape, which the Reshape after the kernel takes
            outs = out if several else (out,)
            return (*outs, *[np.asarray(np.shape(o), dtype=np.int64) for o in outs])
        return out
    kernel.__name__ = f"{spec.name}_{'guarded' if guarded else 'public'}_kernel"
    return kernel


def _declare(domain: str, spec: OpSpec, guarded: bool) -> None:
    """One registration per type the bridge carries, so that ORT refuses any other type when the session is made
    (data of a type the bridge cannot carry would abort the process when the node runs)."""
    boolean_out = spec.output_type_param != spec.inputs[0].type_param
    attrs = {**_bridge_attrs(spec), **(_GUARD_ATTRS if guarded else {REFUSAL_ATTR: PyCustomOpDef.dt_string})}
    for signature in bridge_signatures(spec):
        value_types = iter(BRIDGE_TYPE[t] for t in signature)
        dt = BRIDGE_TYPE[signature[0]]
        inputs = [_I64 if formal.type_param == "T_SHAPE" or (guarded and formal.shape_only)
                  else dt if formal.shape_only else next(value_types) for formal in spec.inputs]
        out = PyCustomOpDef.dt_bool if boolean_out else dt
        outputs = [out] * len(spec.outputs) + ([_I64] * len(spec.outputs) if guarded else [])
        bridge.declare(f"{domain}::{spec.name}", inputs, outputs, attrs,
                            _kernel(spec, guarded, lambda x, b=boolean_out: np.bool_ if b else x.dtype))


def register() -> None:
    """Register every op with onnxruntime-extensions, exactly once per process (reload-safe)."""
    st = state()
    if st.registered:
        return
    bridge.install()
    with st.lock:
        if st.registered:
            return
        for spec in OP_SPECS:
            _declare(DOMAIN, spec, guarded=False)
            _declare(GUARDED_DOMAIN, spec, guarded=True)
        check_attrs = {**_GUARD_ATTRS, "auto_broadcast": PyCustomOpDef.dt_string, "axis": _I64, "allowzero": _I64,
                       "elem_type": _I64}
        bridge.declare(f"{GUARDED_DOMAIN}::{ELEMENTWISE_CHECK}", [_I64, _I64], [_I64], check_attrs,
                            lambda inputs, attrs: elementwise_check(*inputs, **attrs))
        broadcast_attrs = {**_GUARD_ATTRS, "mode": PyCustomOpDef.dt_string, "axis": _I64, "allowzero": _I64,
                           "elem_type": _I64}
        bridge.declare(f"{GUARDED_DOMAIN}::{BROADCAST_CHECK}", [_I64, _I64, _I64], [_I64, _I64], broadcast_attrs,
                       lambda inputs, attrs: broadcast_check(*inputs, attrs))
        rank_attrs = {"op": PyCustomOpDef.dt_string, "node": PyCustomOpDef.dt_string, "quiet": _I64,
                      "mode": PyCustomOpDef.dt_string, "mode_attr": PyCustomOpDef.dt_string,
                      "input": PyCustomOpDef.dt_string}
        bridge.declare(f"{GUARDED_DOMAIN}::{RANK_CHECK}", [_I64], [_I64], rank_attrs,
                       lambda inputs, attrs: rank_check(*inputs, **attrs))
        st.registered = True


def library_path() -> str:
    """The onnxruntime-extensions library that carries our ops, with the ops registered."""
    register()
    return get_library_path()
