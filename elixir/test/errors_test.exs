defmodule Nx.Vulkan.ErrorsTest do
  use ExUnit.Case, async: true
  import NxVulkan.TestHelpers
  alias Nx.Vulkan.NIF

  test "an unknown dtype names the call and the dtype" do
    assert {:error, message} = NIF.from_binary(<<0, 0, 0, 0>>, "f33", {1})
    assert message =~ "from_binary"
    assert message =~ "f33"
    assert {:error, message} = NIF.as_type(tensor!([1], "s32", {1}), "q8")
    assert message =~ "as_type" and message =~ "q8"
  end

  test "a binary of the wrong length names dtype, shape and sizes" do
    assert {:error, message} = NIF.from_binary(<<1, 2, 3>>, "f32", {2})
    assert message =~ "f32"
    assert message =~ "[2]"
    assert message =~ "3 bytes"
  end

  test "mismatched shapes name the op and the shapes" do
    left = tensor!([1.0, 2.0], "f32", {2})
    right = tensor!([1.0, 2.0, 3.0], "f32", {3})
    assert {:error, message} = NIF.binary_op(:add, left, right)
    assert message =~ "add"
    assert message =~ "[2]" and message =~ "[3]"
  end

  test "ops Nx rejects for a dtype are errors" do
    floats = tensor!([1.0], "f32", {1})
    assert {:error, message} = NIF.binary_op(:bitwise_and, floats, floats)
    assert message =~ "bitwise_and"
  end

  test "unknown op names" do
    tensor = tensor!([1.0], "f32", {1})
    assert {:error, message} = NIF.binary_op(:frobnicate, tensor, tensor)
    assert message =~ "frobnicate"
    assert {:error, message} = NIF.unary_op("frobnicate", tensor)
    assert message =~ "frobnicate"
  end

  test "invalid views name the view and the shape" do
    tensor = tensor!([1, 2, 3, 4, 5, 6], "s32", {2, 3})
    assert {:error, message} = NIF.reshape(tensor, {4})
    assert message =~ "reshape" and message =~ "[2, 3]"
    assert {:error, message} = NIF.transpose(tensor, [0, 0])
    assert message =~ "transpose"
    assert {:error, message} = NIF.slice(tensor, [0, 2], [2, 2])
    assert message =~ "slice"
    assert {:error, message} = NIF.from_binary(<<>>, "f32", {-1})
    assert message =~ "from_binary"
  end

  test "a panic comes back as an error and the VM carries on" do
    assert {:error, message} = NIF.test_panic()
    assert message =~ "panicked"
    tensor = tensor!([1.0, 2.0], "f32", {2})
    assert values!(ok!(NIF.binary_op(:add, tensor, tensor))) == [2.0, 4.0]
    assert {:error, _} = NIF.test_panic()
    assert values!(tensor) == [1.0, 2.0]
  end
end
