defmodule Nx.Vulkan.ViewsTest do
  use ExUnit.Case, async: true
  import NxVulkan.TestHelpers
  alias Nx.Vulkan.NIF

  setup do
    %{matrix: tensor!([1, 2, 3, 4, 5, 6], "s32", {2, 3})}
  end

  test "reshape", %{matrix: matrix} do
    view = ok!(NIF.reshape(matrix, {3, 1, 2}))
    assert NIF.shape(view) == {:ok, {3, 1, 2}}
    assert values!(view) == [1, 2, 3, 4, 5, 6]
  end

  test "transpose", %{matrix: matrix} do
    view = ok!(NIF.transpose(matrix, [1, 0]))
    assert NIF.shape(view) == {:ok, {3, 2}}
    assert values!(view) == [1, 4, 2, 5, 3, 6]
  end

  test "squeeze" do
    tensor = tensor!([7, 8], "s32", {1, 2, 1})
    view = ok!(NIF.squeeze(tensor, [0, 2]))
    assert NIF.shape(view) == {:ok, {2}}
    assert values!(view) == [7, 8]
  end

  test "broadcast maps input axes to output axes" do
    column = tensor!([1, 2], "s32", {2})
    view = ok!(NIF.broadcast(column, {2, 3}, [0]))
    assert values!(view) == [1, 1, 1, 2, 2, 2]
  end

  test "slice", %{matrix: matrix} do
    view = ok!(NIF.slice(matrix, [0, 1], [2, 2]))
    assert NIF.shape(view) == {:ok, {2, 2}}
    assert values!(view) == [2, 3, 5, 6]
  end

  test "ops on views", %{matrix: matrix} do
    transposed = ok!(NIF.transpose(matrix, [1, 0]))
    sum = ok!(NIF.binary_op(:add, transposed, transposed))
    assert values!(sum) == [2, 8, 4, 10, 6, 12]
  end
end
