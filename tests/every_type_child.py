"""The child process of tests/test_every_type.py: every ONNX tensor type through one path's op families.

``python -m tests.every_type_child PATH START`` runs the items (family, type) of PATH from index START on. Before
each attempt it prints ``{"event": "begin", ...}`` and after it ``{"event": "end", ...}`` as one JSON line on stdout,
flushed, and marks stderr the same way, so that the parent knows which item was running (and what it wrote to
stderr) when the process died by a signal. The parent imports this module for the names of the items and for
``compare``. PATH "selftest" (``selftest START TYPE:SIGNAL,... ITEMS_JSON``) checks the parent: it imports no
onnx_bcast and dies by SIGNAL on the items of those types.
"""

from __future__ import annotations

import ctypes
import json
import sys
import traceback
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# every element type the installed onnx knows, in enum order (newer ones included as they appear)
TYPES: list[tuple[str, int]] = [(name.lower(), value) for name, value in TensorProto.DataType.items()
                                if value != TensorProto.UNDEFINED]
FAMILIES = ["Broadcast-numpy", "Broadcast-explicit", "BroadcastV0", "BroadcastLikeV0", "Add", "BroadcastBackprop",
            "Unbroadcast"]
PATHS = {
    "session": "onnx_bcast.InferenceSession(model).run",
    "session_native": "onnx_bcast.InferenceSession(model, backend='native').run",
    "prepare": "onnxruntime.InferenceSession(prepare(model), session_options())",
    "spec_form": "onnxruntime.InferenceSession(model, session_options())",
    "convert": "onnxruntime.InferenceSession(convert(model))",
}
ITEMS: list[tuple[str, str]] = [(family, name) for family in FAMILIES for name, _ in TYPES]
TARGET = (2, 3)
STDERR_MARK = "@@every_type begin"


# --------------------------------------------------------------------------------------------- data


def dtype_of(elem: int) -> np.dtype:
    return np.dtype(helper.tensor_dtype_to_np_dtype(elem))


def _numpy_native(dtype: np.dtype) -> bool:
    """A dtype of numpy itself (ONNX Runtime's Python API feeds and fetches these), not one of ml_dtypes."""
    return dtype.type.__module__ == "numpy"


def sample(elem: int) -> np.ndarray:
    """Three distinct values of the type, no NaN (Casts and bit patterns of NaN differ between implementations)."""
    dtype = dtype_of(elem)
    if elem == TensorProto.STRING:
        return np.array(["a", "", "Zürich"], dtype=object)
    if elem == TensorProto.BOOL:
        return np.array([True, False, True])
    if dtype.kind == "c":
        return np.array([1 + 2j, -3j, 0.5], dtype=dtype)
    for values in ([1.5, -2.0, 0.5], [1, -2, 0], [1.0, 2.0, 0.5], [1, 2, 3]):
        try:
            x = np.array(values, dtype=np.float32).astype(dtype)
            back = x.astype(np.float32)
        except (TypeError, ValueError, OverflowError):
            continue
        if np.all(np.isfinite(back)) and np.array_equal(back, np.array(values, np.float32)):
            return x
    raise AssertionError(f"no exact sample values for {dtype}")


def feed_mode(elem: int) -> str:
    """How the data reaches the graph: "numpy" (a fed input), "ortvalue" (a fed input built from the raw bytes, for
    ml_dtypes types of whole bytes) or "initializer" (packed sub-byte types, which no feed can carry)."""
    dtype = dtype_of(elem)
    if _numpy_native(dtype):
        return "numpy"
    x = sample(elem)
    if len(numpy_helper.from_array(x).raw_data) != x.nbytes:
        return "initializer"
    return "ortvalue"


def feed_value(array: np.ndarray, elem: int) -> Any:
    if feed_mode(elem) == "numpy":
        return array
    import onnxruntime as ort

    raw = np.ascontiguousarray(array).view(np.dtype(f"uint{8 * array.dtype.itemsize}"))
    return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(raw, elem)


def family_inputs(family: str, elem: int) -> dict[str, np.ndarray]:
    """The data inputs of a family's node: each of the same type ``elem``."""
    x = sample(elem)
    if family == "Add":
        return {"A": np.stack([x, x[::-1]]), "B": x}
    if family == "BroadcastLikeV0":
        return {"arg": x, "like_arg": np.stack([x[::-1], x])}
    if family in ("BroadcastBackprop", "Unbroadcast"):
        return {"delta": np.stack([x, x[::-1]])}  # summed over axis 0: x + x[::-1], exact in every type
    return {"data": x}


# --------------------------------------------------------------------------------------------- models


def _opset() -> int:
    from onnx_bcast.model.runtime_limits import max_opset

    return min(21, max_opset())


def build(family: str, elem: int) -> tuple[onnx.ModelProto, dict[str, Any]]:
    """A one-node model of ``family`` on type ``elem`` (spec form, every attribute on the node) and its feeds."""
    from onnx_bcast.model.runtime_limits import max_ir_version

    data = family_inputs(family, elem)
    consts: dict[str, np.ndarray] = {}
    if family == "Broadcast-numpy":
        # axes_mapping present and empty: the form the README's "Limits" gives for plain ONNX Runtime
        consts = {"target_shape": np.array(TARGET, np.int64), "axes_mapping": np.zeros([0], np.int64)}
        node = helper.make_node("Broadcast", ["data", "target_shape", "axes_mapping"], ["y"], domain="onnx_bcast",
                                name="broadcast_node", mode="numpy", axis=-1)
    elif family == "Broadcast-explicit":
        consts = {"target_shape": np.array(TARGET, np.int64), "axes_mapping": np.array([1], np.int64)}
        node = helper.make_node("Broadcast", ["data", "target_shape", "axes_mapping"], ["y"], domain="onnx_bcast",
                                name="broadcast_node", mode="explicit", axis=-1)
    elif family == "BroadcastV0":
        node = helper.make_node("BroadcastV0", ["data"], ["y"], domain="onnx_bcast", name="broadcast_v0_node",
                                shape=list(TARGET), broadcast_axes=[0])
    elif family == "BroadcastLikeV0":
        node = helper.make_node("BroadcastLikeV0", ["arg", "like_arg"], ["y"], domain="onnx_bcast",
                                name="broadcast_like_v0_node", initial_broadcast_axes=[0])
    elif family == "Add":
        node = helper.make_node("Add", ["A", "B"], ["y"], domain="onnx_bcast", name="add_node",
                                auto_broadcast="numpy", axis=-1)
    elif family == "BroadcastBackprop":  # the gradient of Broadcast<numpy>([3] -> [2, 3])
        consts = {"data_shape": np.array(TARGET[1:], np.int64), "axes_mapping": np.zeros([0], np.int64)}
        node = helper.make_node("BroadcastBackprop", ["delta", "data_shape", "axes_mapping"], ["y"],
                                domain="onnx_bcast", name="broadcast_backprop_node", mode="numpy", axis=-1)
    elif family == "Unbroadcast":  # the gradients of Add<numpy>((2, 3), (3,)): the second output is checked
        consts = {"a_shape": np.array(TARGET, np.int64), "b_shape": np.array(TARGET[1:], np.int64)}
        node = helper.make_node("Unbroadcast", ["delta", "a_shape", "b_shape"], ["a_grad", "y"], domain="onnx_bcast",
                                name="unbroadcast_node", auto_broadcast="numpy", axis=-1)
    else:
        raise AssertionError(family)
    initializers = [numpy_helper.from_array(v, k) for k, v in consts.items()]
    inputs, feeds = [], {}
    for name, value in data.items():
        if feed_mode(elem) == "initializer":
            initializers.append(numpy_helper.from_array(value, name))
        else:
            inputs.append(helper.make_tensor_value_info(name, elem, list(value.shape)))
            feeds[name] = value
    shape = list(TARGET[1:]) if family in ("BroadcastBackprop", "Unbroadcast") else list(TARGET)
    outputs = [helper.make_tensor_value_info("y", elem, shape)]
    if family == "Unbroadcast":
        outputs.insert(0, helper.make_tensor_value_info("a_grad", elem, list(TARGET)))
    graph = helper.make_graph([node], f"every_type_{family}", inputs, outputs, initializer=initializers)
    opsets = [helper.make_opsetid("", _opset()), helper.make_opsetid("onnx_bcast", 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=max_ir_version()), feeds


def expectation(family: str, elem: int) -> tuple[np.ndarray | None, str]:
    """The independent expected output, or None with the reason there is none."""
    data = family_inputs(family, elem)
    if family in ("BroadcastBackprop", "Unbroadcast"):
        delta = data["delta"]
        if elem in (TensorProto.BOOL, TensorProto.STRING) or dtype_of(elem).kind == "c":
            return None, "no gradient of a non-numeric type"
        wide = np.float32 if dtype_of(elem).kind not in "iu" else delta.dtype  # 16-bit and 8-bit floats in float32
        return np.add.reduce(delta.astype(wide), axis=0, dtype=wide).astype(delta.dtype), "np.add.reduce over axis 0"
    if family != "Add":
        first = next(iter(data.values()))
        return np.broadcast_to(first, TARGET), "np.broadcast_to"
    schema = onnx.defs.get_schema("Add", _opset())
    allowed = {t for c in schema.type_constraints for t in c.allowed_type_strs}
    type_str = f"tensor({helper.tensor_dtype_to_string(elem).split('.')[-1].lower()})"
    if type_str not in allowed:
        return None, f"standard Add-{_opset()} does not define {type_str}"
    from onnx.reference import ReferenceEvaluator

    graph = helper.make_graph([helper.make_node("Add", ["A", "B"], ["y"])], "reference",
                              [helper.make_tensor_value_info(k, elem, list(v.shape)) for k, v in data.items()],
                              [helper.make_tensor_value_info("y", elem, list(TARGET))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", _opset())])
    return np.asarray(ReferenceEvaluator(model).run(None, data)[0]), "onnx.reference Add"


# --------------------------------------------------------------------------------------------- paths


class Stage:
    """The step a path is at, for the report."""

    name = "build"


def _options() -> Any:
    import onnxruntime as ort

    import onnx_bcast

    options = ort.SessionOptions()
    options.log_severity_level = 3  # errors only: a death's stderr tail should be the cause
    return onnx_bcast.session_options(options)


def make_session(path: str, model: onnx.ModelProto, stage: Stage) -> Any:
    import onnxruntime as ort

    import onnx_bcast

    if path == "session":
        stage.name = "session"  # prepare() happens inside the constructor
        return onnx_bcast.InferenceSession(model)
    if path == "session_native":
        stage.name = "session"
        return onnx_bcast.InferenceSession(model, backend="native")
    if path == "prepare":
        stage.name = "prepare"
        prepared = onnx_bcast.prepare(model)
        stage.name = "session"
        return ort.InferenceSession(prepared.SerializeToString(), sess_options=_options(),
                                    providers=["CPUExecutionProvider"])
    if path == "spec_form":
        stage.name = "session"
        return ort.InferenceSession(model.SerializeToString(), sess_options=_options(),
                                    providers=["CPUExecutionProvider"])
    if path == "convert":
        stage.name = "convert"
        converted = onnx_bcast.convert(model)
        stage.name = "session"
        return ort.InferenceSession(converted.SerializeToString(), providers=["CPUExecutionProvider"])
    raise AssertionError(path)


def _raw_run(session: Any, feeds: dict[str, Any]) -> tuple[bytes, list[int], int]:
    """Run with OrtValues and read the output's bytes: for output types ONNX Runtime cannot hand to numpy."""
    import onnxruntime as ort

    values = {k: v if isinstance(v, ort.OrtValue) else ort.OrtValue.ortvalue_from_numpy(v) for k, v in feeds.items()}
    out = session.run_with_ort_values(["y"], values)[0]
    return ctypes.string_at(out.data_ptr(), _size_in_bytes(out)), list(out.shape()), out.element_type()


_PACKED = {getattr(TensorProto, name) for name in ("INT4", "UINT4", "FLOAT4E2M1") if hasattr(TensorProto, name)}


def _size_in_bytes(out: Any) -> int:
    """The bytes of an OrtValue's tensor (``tensor_size_in_bytes`` is newer than onnxruntime 1.20): 4-bit types
    two to a byte."""
    if hasattr(out, "tensor_size_in_bytes"):
        return int(out.tensor_size_in_bytes())
    count, elem = int(np.prod(out.shape(), dtype=np.int64)), out.element_type()
    return (count + 1) // 2 if elem in _PACKED else count * helper.tensor_dtype_to_np_dtype(elem).itemsize


def compare(actual: Any, expected: np.ndarray, elem: int) -> str | None:
    """None when ``actual`` is ``expected`` bit for bit (through a uint8 view), else what differs."""
    if isinstance(actual, tuple):  # raw bytes read from an OrtValue
        raw, shape, element_type = actual
        want = numpy_helper.from_array(np.ascontiguousarray(expected))
        if element_type != elem or shape != list(expected.shape):
            return f"type {element_type} shape {shape}, expected type {elem} shape {list(expected.shape)}"
        return None if raw == want.raw_data else f"bytes {raw.hex()}, expected {want.raw_data.hex()}"
    actual = np.asarray(actual)
    if actual.shape != expected.shape:
        return f"shape {actual.shape}, expected {expected.shape}"
    if expected.dtype == object:
        got = [v.decode() if isinstance(v, bytes) else v for v in actual.reshape(-1).tolist()]
        return None if got == expected.reshape(-1).tolist() else f"{got}, expected {expected.tolist()}"
    if actual.dtype.itemsize != expected.dtype.itemsize or (actual.dtype != expected.dtype
                                                            and _numpy_native(expected.dtype)):
        return f"dtype {actual.dtype}, expected {expected.dtype}"
    got = np.ascontiguousarray(actual).view(np.uint8)
    want = np.ascontiguousarray(expected).view(np.uint8)
    return None if np.array_equal(got, want) else f"{actual.tolist()} (bytes {got.tobytes().hex()}), expected " \
        f"{expected.astype(object).tolist()} (bytes {want.tobytes().hex()})"


def _show(actual: Any) -> str:
    if isinstance(actual, tuple):
        return f"bytes {actual[0].hex()}"
    return f"{np.asarray(actual).astype(object).tolist()}"


def _kind(exc: BaseException, stage: str) -> str:
    """BroadcastError, an onnxruntime error at session creation or at run, or something else ("other")."""
    from onnx_bcast import BroadcastError

    if isinstance(exc, BroadcastError):
        return "BroadcastError"
    frames = traceback.extract_tb(exc.__traceback__)
    from_ort = type(exc).__module__.startswith("onnxruntime") or (
        bool(frames) and "/onnxruntime/" in frames[-1].filename.replace("\\", "/"))
    if from_ort and stage in ("session", "run"):
        return f"ort-{stage}"
    return f"other:{type(exc).__name__}"


def attempt(path: str, family: str, elem: int) -> dict[str, Any]:
    """One item's outcome: ok, wrong, unchecked (ran; no standard op to check against) or refused."""
    stage = Stage()
    how = "run"
    try:
        model, feeds = build(family, elem)
        session = make_session(path, model, stage)
        stage.name = "feed"
        feeds = {k: feed_value(v, elem) for k, v in feeds.items()}
        stage.name = "run"
        try:
            actual: Any = session.run(["y"], feeds)[0]
        except RuntimeError as exc:  # the run ended; only its output has no numpy type: read its bytes instead
            if "No corresponding Numpy type" not in str(exc):
                raise
            stage.name = "fetch"
            actual, how = _raw_run(session, feeds), "run; read as raw bytes (no numpy type in ONNX Runtime)"
    except Exception as exc:  # every refusal is recorded; the parent judges it
        kind = _kind(exc, stage.name)
        message = (str(exc).strip().splitlines() or [""])[0]
        return {"outcome": "refused", "kind": kind, "stage": stage.name, "message": message,
                "type": type(exc).__name__}
    expected, source = expectation(family, elem)
    if expected is None:
        return {"outcome": "unchecked", "how": how, "message": f"{source}; got {_show(actual)}"}
    problem = compare(actual, expected, elem)
    if problem is not None:
        return {"outcome": "wrong", "how": how, "message": f"against {source}: {problem}"}
    return {"outcome": "ok", "how": how, "message": source}


def _emit(record: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


def main(path: str, start: int) -> None:
    if path != "selftest":
        import onnx_bcast  # noqa: F401  (registers the schemas before any model is built)
    elems = dict(TYPES)
    items = ITEMS if path != "selftest" else [tuple(item) for item in json.loads(sys.argv[4])]
    _emit({"event": "ready"})
    for index in range(start, len(items)):
        family, name = items[index]
        _emit({"event": "begin", "i": index, "path": path, "family": family, "type": name})
        sys.stderr.write(f"{STDERR_MARK} {index}\n")
        sys.stderr.flush()
        if path == "selftest":  # the parent's own check: argv[3] "type:SIGNAL,..." dies by SIGNAL on those types
            import os
            import signal

            deaths = dict(pair.split(":") for pair in sys.argv[3].split(","))
            if name in deaths:
                sys.stderr.write(f"selftest: dying by {deaths[name]} on {family} {name}\n")
                sys.stderr.flush()
                os.kill(os.getpid(), getattr(signal, deaths[name]))
            result = {"outcome": "ok", "how": "selftest", "message": ""}
        else:
            result = attempt(path, family, elems[name])
        _emit({"event": "end", "i": index, **result})


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
