"""Importers: models from other sources made into models with onnx_bcast ops (legacy ONNX opsets 1-6)."""
