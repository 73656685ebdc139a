"""``python -m onnx_bcast``: the ``onnx-bcast`` command."""

import sys

from onnx_bcast.cli.main import main

sys.exit(main())
