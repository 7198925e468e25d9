"""The module docstring of ``harness.training.fixtures`` lists op_coverage_model's operators in graph order
with their output shapes; it skipped the third (dilated) CONV_2D and gave the flattening RESHAPE as [1, 3]."""
import re

from harness.training import fixtures
from onboard.policy import tflite_pure as fb


def test_the_docstring_lists_the_op_coverage_models_operators_in_order():
    text = " ".join(fixtures.__doc__.split("``chain_model")[0].split())
    listed = re.findall(r"\b(QUANTIZE|DEQUANTIZE|RESHAPE|CONV_2D|FULLY_CONNECTED|TANH|LOGISTIC)\b", text)
    model = fb.read_model(fixtures.op_coverage_model())
    assert listed == [op["op"] for op in model["operators"]]
    shapes = [model["tensors"][op["outputs"][0]]["shape"] for op in model["operators"]]
    for shape in ([1, 4, 4, 1], [1, 2, 2, 3], [1, 2, 2, 2], [1, 8], [1, 4]):
        assert shape in shapes and ("%s" % shape) in text, shape
