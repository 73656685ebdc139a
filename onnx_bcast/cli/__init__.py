"""The ``onnx-bcast`` command: convert, run, check, demo and ops."""
