"""Our ops told to onnx: schemas with shape inference, their memo keys, constant readers and reference ops."""
