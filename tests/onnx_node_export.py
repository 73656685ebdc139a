"""ONNX's node test cases of one case module of ``onnx.backend.test.case.node``, without collecting all of them."""

from __future__ import annotations

import importlib
import sys
import warnings

import numpy as np
import onnx.backend.test.case.node as node_cases


def export_cases(module: str) -> list:
    """The TestCases one case module exports, whatever ``collect_testcases`` calls ran before.

    A module imported for the first time exports while its classes are defined (into onnx's own list, where a later
    ``collect_testcases(None)`` expects them). A module imported earlier, maybe while another op filter was set (as
    ``collect_testcases("Expand")`` does), has its ``export*`` functions run again into a private list, seeded as
    onnx's ``_Exporter`` seeds them, so the data are the same.
    """
    full = f"{node_cases.__name__}.{module}"
    saved_target, saved_rng = node_cases._TargetOpType, np.random.get_state()
    node_cases._TargetOpType = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # some case modules warn about overflows while exporting
            if full not in sys.modules:
                start = len(node_cases._NodeTestCases)
                importlib.import_module(full)
                return list(node_cases._NodeTestCases[start:])
            saved = node_cases._NodeTestCases, node_cases._existing_names
            node_cases._NodeTestCases, node_cases._existing_names = [], {}
            try:
                for cls in vars(sys.modules[full]).values():
                    if isinstance(cls, type) and cls.__module__ == full:
                        for attr in vars(cls):
                            if attr.startswith("export"):
                                np.random.seed(0)
                                getattr(cls, attr)()
                return list(node_cases._NodeTestCases)
            finally:
                node_cases._NodeTestCases, node_cases._existing_names = saved
    finally:
        node_cases._TargetOpType = saved_target
        np.random.set_state(saved_rng)
