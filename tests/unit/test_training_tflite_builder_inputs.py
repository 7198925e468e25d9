"""TfliteBuilder refuses what it would otherwise write wrong, with a ValueError naming the tensor or operator:
integer tensor data outside the type's range (200 was stored as int8 -56, 2**40 as int32 0) or not whole
(1.7 was stored as 1); an option the operator's table does not carry (``activation="RELU"`` on TANH was left
out of the file); an unknown activation or padding (a KeyError inside ``finish``). Valid data are written
as before (the committed models' bytes are checked by their own tests)."""
import numpy as np
import pytest

from harness.training.fixtures import chain_model
from harness.training.tflite_builder import TfliteBuilder


@pytest.mark.parametrize("dtype,data,needle", [
    ("int8", np.array([200, -3]), r"int8 data must lie in \[-128, 127\], got -3 \.\. 200"),
    ("int8", [1, -129], r"int8 data must lie in \[-128, 127\]"),
    ("int32", np.array([2 ** 40, 1]), r"int32 data must lie in \[-2147483648, 2147483647\]"),
    ("int8", np.array([1.7, -2.0]), "int8 data must be whole numbers, got 1.7"),
    ("int32", np.array([np.nan, 1.0]), "int32 data must be whole numbers"),
    ("int8", np.array([True, False]), "int8 data must be numbers, got bool"),
])
def test_integer_data_that_would_wrap_or_truncate_is_refused(dtype, data, needle):
    b = TfliteBuilder()
    with pytest.raises(ValueError, match=r"tensor 'w': " + needle):
        b.add_tensor("w", [2], dtype, data=data, scale=0.1)
    assert b.tensors == []


def test_whole_numbers_in_range_are_stored_exactly():
    b = TfliteBuilder()
    b.add_tensor("a", [4], "int8", data=np.array([-128.0, 127.0, 0.0, -1.0]), scale=0.1)
    b.add_tensor("b", [2], "int32", data=[-(2 ** 31), 2 ** 31 - 1], scale=0.1)
    b.add_tensor("c", [0], "int8", data=np.zeros(0), scale=0.1)
    assert b.tensors[0]["data"].tolist() == [-128, 127, 0, -1]
    assert b.tensors[1]["data"].tolist() == [-(2 ** 31), 2 ** 31 - 1]
    assert b.tensors[2]["data"].size == 0


def _two_tensors():
    b = TfliteBuilder()
    x = b.add_tensor("x", [1, 4], "int8", scale=0.1, zero_point=0)
    y = b.add_tensor("y", [1, 4], "int8", scale=1.0 / 128, zero_point=0)
    return b, x, y


@pytest.mark.parametrize("op,options,needle", [
    ("TANH", {"activation": "RELU"}, "TANH takes the options none, not activation"),
    ("FULLY_CONNECTED", {"padding": "SAME"},
     "FULLY_CONNECTED takes the options activation, keep_num_dims, not padding"),
    ("CONV_2D", {"stride": 2}, "not stride"),
    ("ADD", {"activation": "relu"}, "ADD: unknown activation 'relu'"),
    ("CONV_2D", {"padding": "same"}, "CONV_2D: unknown padding 'same'"),
])
def test_an_option_the_file_would_not_carry_is_refused(op, options, needle):
    b, x, y = _two_tensors()
    with pytest.raises(ValueError, match=needle):
        b.add_op(op, [x], [y], **options)
    assert b.ops == []


def test_the_fixture_models_build_unchanged():
    data = chain_model(lut="TANH", extra_op="SOFTMAX")
    assert data[4:8] == b"TFL3" and data == chain_model(lut="TANH", extra_op="SOFTMAX")


@pytest.mark.parametrize("name,shape,needle", [
    (None, [1, 4], "a tensor name must be a str, got None"),
    ("x", [1, 2.5], r"tensor 'x': the shape must be whole numbers >= 0, got \[1, 2.5\]"),
    ("x", [1, -4], "the shape must be whole numbers >= 0"),
    ("x", [True, 4], "the shape must be whole numbers >= 0"),
])
def test_a_bad_name_or_shape_is_refused_when_added(name, shape, needle):
    # before: a shape of [1, 2.5] was written as [1, 2]; a name of None failed inside finish()
    b = TfliteBuilder()
    with pytest.raises(ValueError, match=needle):
        b.add_tensor(name, shape, "int8", scale=0.1)
    assert b.tensors == []


@pytest.mark.parametrize("inputs,outputs,needle", [
    ([0, 7], [1], r"FULLY_CONNECTED: input 7 is not a tensor index \(0\.\.1, or -1 for an omitted input\)"),
    ([0], [-1], "FULLY_CONNECTED: an output cannot be omitted"),
    ([0, -2], [1], "input -2 is not a tensor index"),
    ([0.0], [1], "input 0.0 is not a tensor index"),
])
def test_an_operator_on_a_tensor_that_does_not_exist_is_refused(inputs, outputs, needle):
    b, x, y = _two_tensors()
    with pytest.raises(ValueError, match=needle):
        b.add_op("FULLY_CONNECTED", inputs, outputs)
    assert b.ops == []


def test_graph_inputs_and_outputs_must_be_tensors():
    b, x, y = _two_tensors()
    b.add_op("TANH", [x], [y])
    with pytest.raises(ValueError, match=r"graph input/output 5 is not a tensor index \(0\.\.1\)"):
        b.finish([x], [5])
    assert b.finish([x], [y])[4:8] == b"TFL3"


def test_an_omitted_optional_input_is_allowed():
    b, x, y = _two_tensors()
    w = b.add_tensor("w", [4, 4], "int8", data=np.eye(4), scale=0.01)
    b.add_op("FULLY_CONNECTED", [x, w, -1], [y])
    assert b.ops[0]["inputs"] == [x, w, -1]
