defmodule Nx.Vulkan.OpsTest do
  use ExUnit.Case, async: true
  import NxVulkan.TestHelpers
  alias Nx.Vulkan.NIF

  @left [1.5, -2.0, 0.25, 8.0, -0.5, 3.0]
  @right [2.0, 4.0, -1.0, 0.5, 0.5, 10.0]

  test "add and multiply on f32 match Elixir" do
    left = tensor!(@left, "f32", {2, 3})
    right = tensor!(@right, "f32", {2, 3})
    sum = ok!(NIF.binary_op(:add, left, right))
    product = ok!(NIF.binary_op("multiply", left, right))
    assert NIF.dtype(sum) == {:ok, "f32"}
    assert values!(sum) == Enum.zip_with(@left, @right, &(&1 + &2))
    assert values!(product) == Enum.zip_with(@left, @right, &(&1 * &2))
  end

  test "add and multiply on s32 wrap like Nx" do
    left_values = [1, -7, 2_147_483_647, 40_000]
    right_values = [2, 3, 1, 60_000]
    left = tensor!(left_values, "s32", {4})
    right = tensor!(right_values, "s32", {4})

    wrap = fn value ->
      <<wrapped::signed-32>> = <<value::signed-32>>
      wrapped
    end

    assert values!(ok!(NIF.binary_op(:add, left, right))) ==
             Enum.zip_with(left_values, right_values, &wrap.(&1 + &2))

    assert values!(ok!(NIF.binary_op(:multiply, left, right))) ==
             Enum.zip_with(left_values, right_values, &wrap.(&1 * &2))
  end

  test "binary ops broadcast and promote types" do
    matrix = tensor!([1, 2, 3, 4, 5, 6], "s32", {2, 3})
    row = tensor!([0.5, 1.5, 2.5], "f32", {3})
    sum = ok!(NIF.binary_op(:add, matrix, row))
    assert NIF.shape(sum) == {:ok, {2, 3}}
    assert NIF.dtype(sum) == {:ok, "f32"}
    assert values!(sum) == [1.5, 3.5, 5.5, 4.5, 6.5, 8.5]
  end

  test "exp on f32 within tolerance" do
    inputs = [-3.0, -1.0, 0.0, 0.5, 1.0, 5.0]
    result = values!(ok!(NIF.unary_op(:exp, tensor!(inputs, "f32", {6}))))

    for {input, value} <- Enum.zip(inputs, result) do
      expected = :math.exp(input)
      assert abs(value - expected) <= 1.0e-6 * abs(expected), "exp(#{input}) = #{value}"
    end
  end

  test "exp on s32 returns f32" do
    result = ok!(NIF.unary_op(:exp, tensor!([0, 1], "s32", {2})))
    assert NIF.dtype(result) == {:ok, "f32"}
  end

  test "comparisons return u8" do
    left = tensor!(@left, "f32", {6})
    right = tensor!(@right, "f32", {6})

    for {op, fun} <- [less: &Kernel.</2, greater_equal: &Kernel.>=/2, equal: &Kernel.==/2] do
      result = ok!(NIF.binary_op(op, left, right))
      assert NIF.dtype(result) == {:ok, "u8"}
      assert values!(result) == Enum.zip_with(@left, @right, &if(fun.(&1, &2), do: 1, else: 0))
    end
  end

  test "negate and abs on s64" do
    values = [-5, 0, 9_000_000_000]
    tensor = tensor!(values, "s64", {3})
    assert values!(ok!(NIF.unary_op(:negate, tensor))) == Enum.map(values, &(-&1))
    assert values!(ok!(NIF.unary_op(:abs, tensor))) == Enum.map(values, &abs/1)
  end
end

defmodule Nx.Vulkan.OpListTest do
  use ExUnit.Case, async: true

  test "Nx.Vulkan.Ops lists exactly the op table's ops" do
    {:ok, %{binary: binary, unary: unary, reduce: reduce, cumulative: cumulative}} =
      Nx.Vulkan.NIF.op_names()

    assert Enum.map(Nx.Vulkan.Ops.binary(), &Atom.to_string/1) == binary
    assert Enum.map(Nx.Vulkan.Ops.unary(), &Atom.to_string/1) == unary
    assert Enum.map(Nx.Vulkan.Ops.reduce(), &Atom.to_string/1) == reduce
    assert Enum.map(Nx.Vulkan.Ops.cumulative(), &Atom.to_string/1) == cumulative
  end
end
