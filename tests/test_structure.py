"""The lowering's structure: layers that point one way, the bridge's private API in sight, every op complete."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from onnxruntime_extensions import PyCustomOpDef
from onnxruntime_extensions import _ocos as ocos

import onnx_bcast
from onnx_bcast.converters import STANDARD
from onnx_bcast.onnx_defs.reference_ops import reference_ops
from onnx_bcast.ops import OP_SPECS
from onnx_bcast.ops.broadcast import MODES
from onnx_bcast.ops.elementwise import RULES as AUTO_BROADCAST_RULES
from onnx_bcast.ort.rule_set import ort_rule_set

ROOT = Path(__file__).resolve().parents[1]


def _child(code: str) -> dict:
    """Run ``code`` in a fresh interpreter (from the checkout) and return the JSON it prints last."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_convert_imports_neither_onnxruntime_nor_extensions() -> None:
    result = _child(
        "import json, sys, onnx, onnx_bcast\n"
        "m = onnx_bcast.convert(onnx.load('models/expand_modes.onnx'))\n"
        "print(json.dumps({'ort': sorted(k for k in sys.modules if k.startswith('onnxruntime')),\n"
        "                  'left': [n.op_type for n in m.graph.node if n.domain == 'onnx_bcast']}))\n")
    assert result == {"ort": [], "left": []}


def test_importing_the_kernels_stays_light() -> None:
    result = _child(
        "import json, sys, numpy as np\n"
        "from onnx_bcast.ops.broadcast import broadcast\n"
        "assert broadcast(np.arange(3), [2, 3]).shape == (2, 3)\n"
        "print(json.dumps(sorted(k for k in sys.modules if k.split('.')[0] in\n"
        "                        ('onnxruntime', 'onnxruntime_extensions', 'openvino'))))\n")
    assert result == []


def test_the_bridge_private_api_we_use_is_still_there() -> None:
    """ort_marshal relies on these onnxruntime-extensions internals; an upgrade that moves them fails here."""
    assert isinstance(ocos.Opdef._odlist, dict)
    assert callable(PyCustomOpDef.install_hooker)
    onnx_bcast.session_options()  # registers our ops
    opdef = next(iter(ocos.Opdef._odlist.values()))
    assert hasattr(opdef, "_nativedef") and isinstance(opdef._nativedef.obj_id, int)
    assert isinstance(list(opdef._nativedef.output_types), list)
    assert callable(opdef.cast_attributes) and callable(opdef.body)


def _modes(spec: object) -> tuple[str, ...]:
    if "auto_broadcast" in spec.defaults():
        return AUTO_BROADCAST_RULES
    return MODES if "mode" in spec.defaults() else ("",)


@pytest.mark.parametrize("spec", OP_SPECS, ids=lambda s: s.name)
def test_every_op_spec_and_mode_is_complete(spec: object) -> None:
    """Kernel, schema, ORT rule, standard rule, ReferenceEvaluator op and shared cases for every op x mode."""
    from tests.case_table import cases_for

    assert callable(spec.kernel) and callable(spec.static_shape)
    assert onnx.defs.has(spec.name, onnx_bcast.DOMAIN)
    assert spec.name in {cls.__name__ for cls in reference_ops()}
    for mode in _modes(spec):
        assert (spec.name, mode) in STANDARD.rules, (spec.name, mode)
        assert (spec.name, mode) in ort_rule_set().rules, (spec.name, mode)
        assert cases_for(spec.name, mode), f"no shared cases for {spec.name} {mode!r}"
    if spec.family != "elementwise":
        assert onnx.defs.has(spec.name, "onnx_bcast.ort"), "the guarded form has no schema"


def test_rule_sets_hold_no_rule_without_an_op() -> None:
    known = {(spec.name, mode) for spec in OP_SPECS for mode in _modes(spec)}
    assert set(STANDARD.rules) == known
    assert set(ort_rule_set().rules) == known


def test_rules_state_their_rewrite() -> None:
    for rule in [*STANDARD.rules.values(), *ort_rule_set().rules.values()]:
        doc = type(rule).__doc__ or ""
        assert "->" in doc, f"{type(rule).__name__} does not state its rewrite"


def test_every_broadcast_mode_has_its_run_time_conditions() -> None:
    """A mode added to ops.broadcast_modes needs its conditions in converters.mode_guards (and the other way)."""
    from onnx_bcast.converters.mode_guards import CONDITIONS
    from onnx_bcast.ops.broadcast_modes import BROADCAST_MODES

    assert set(CONDITIONS) == {mode.name for mode in BROADCAST_MODES} == set(MODES)
