"""onnxifier's Python warnings during a conversion go to our log at DEBUG; any other warning is shown as before."""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterator
from pathlib import Path

log = logging.getLogger(__name__)


@contextlib.contextmanager
def onnxifier_warnings_logged() -> Iterator[None]:
    """onnxifier warns about its scratch models as it goes (e.g. "Inferring shape failed, value info is not set" on a
    node of ours before the import it deletes is put back): nothing the user can act on, and the written model is
    checked whole afterwards. Those are logged at DEBUG; warnings from anywhere else are shown as they would be."""
    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            yield
    finally:
        _sort(caught)


def _sort(caught: list[warnings.WarningMessage]) -> None:
    import onnxifier  # installed: the caller runs it

    package = Path(onnxifier.__file__).resolve().parent  # not ours, onnx_bcast/onnxifier
    for message in caught:
        if Path(message.filename).resolve().is_relative_to(package):
            log.debug("onnxifier: %s", " ".join(str(message.message).split()))
        else:
            warnings.warn_explicit(message.message, message.category, message.filename, message.lineno,
                                   source=message.source)
