"""ONNX Runtime: sessions, our kernels through onnxruntime-extensions, the ONNX Runtime rule set, ``prepare``."""
