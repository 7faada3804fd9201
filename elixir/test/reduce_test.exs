defmodule Nx.Vulkan.ReduceTest do
  use ExUnit.Case, async: true
  import NxVulkan.TestHelpers
  alias Nx.Vulkan.NIF

  # Host reference: the elements of each output, in row-major order over the reduced axes,
  # grouped by their kept coordinates (row-major too), folded by `fold`.
  defp reference(values, shape, axes, fold) do
    axes = axes || Enum.to_list(0..(tuple_size(shape) - 1)//1)

    all_coordinates(shape)
    |> Enum.zip(values)
    |> Enum.group_by(
      fn {coordinates, _} ->
        for {c, axis} <- Enum.with_index(coordinates), axis not in axes, do: c
      end,
      fn {_, value} -> value end
    )
    |> Enum.sort_by(fn {key, _} -> key end)
    |> Enum.map(fn {_, group} -> fold.(group) end)
  end

  defp first_index_of(group, pick) do
    extreme = pick.(group)
    Enum.find_index(group, &(&1 == extreme))
  end

  defp fold(:sum), do: &Enum.sum/1
  defp fold(:product), do: &Enum.product/1
  defp fold(:reduce_max), do: &Enum.max/1
  defp fold(:reduce_min), do: &Enum.min/1
  defp fold(:all), do: &if(Enum.all?(&1, fn value -> value != 0 end), do: 1, else: 0)
  defp fold(:any), do: &if(Enum.any?(&1, fn value -> value != 0 end), do: 1, else: 0)
  defp fold(:argmax), do: &first_index_of(&1, fn group -> Enum.max(group) end)
  defp fold(:argmin), do: &first_index_of(&1, fn group -> Enum.min(group) end)

  # Nx's result types on s32 input.
  defp result_dtype(op) when op in [:all, :any], do: "u8"
  defp result_dtype(op) when op in [:reduce_max, :reduce_min], do: "s32"
  defp result_dtype(_sum_product_or_index), do: "s64"

  defp random_axes(rank) do
    case :rand.uniform(3) do
      1 -> nil
      _ -> Enum.filter(0..(rank - 1)//1, fn _ -> :rand.uniform(2) == 1 end)
    end
  end

  defp run(op, tensor, axes) do
    {axes, keep_axes} =
      if op in [:argmax, :argmin],
        do: {axes && Enum.take(axes, 1), false},
        else: {axes, false}

    {ok!(NIF.reduce(op, tensor, axes, keep_axes, :low)), axes}
  end

  test "every reduction on random s32 tensors of random rank and axes matches the host" do
    :rand.seed(:exsss, {1, 2, 3})

    for op <- Nx.Vulkan.Ops.reduce(), _trial <- 1..6 do
      shape = random_shape(:rand.uniform(4) - 1)
      # Small values keep products inside s64; zeros give all/any something to find.
      values = random_integers(size(shape), 3)
      tensor = tensor!(values, "s32", shape)
      {result, axes} = run(op, tensor, random_axes(tuple_size(shape)))
      expected = reference(values, shape, axes, fold(op))
      {:ok, dtype} = NIF.dtype(result)
      assert values!(result) == expected, "#{op} over #{inspect(axes)} of #{inspect(shape)}"
      assert dtype == result_dtype(op)
    end
  end

  test "f64 sums keep f64 precision and reductions propagate NaN" do
    nan = <<0, 0, 0, 0, 0, 0, 248, 127>>
    finite = for v <- [1.0e-10, 1.0, -1.0, 2.5e-10, 3.0], into: <<>>, do: <<v::float-64-little>>
    {:ok, tensor} = NIF.from_binary(finite <> nan, "f64", {2, 3})

    # In f32, 1.0e-10 + 1.0 rounds to 1.0 and the first sum would be 0.
    {:ok, <<first::float-64-little, second_sum::binary-size(8)>>} =
      NIF.to_binary(ok!(NIF.reduce(:sum, tensor, [1], false, :low)))

    assert_in_delta first, 1.0e-10, 1.0e-16
    assert first != 0.0
    assert is_nan_f64(second_sum)

    maxes = ok!(NIF.reduce(:reduce_max, tensor, [1], true, :low))
    assert {:ok, {2, 1}} = NIF.shape(maxes)
    assert {:ok, <<1.0::float-64-little, second_max::binary-size(8)>>} = NIF.to_binary(maxes)
    assert is_nan_f64(second_max)
  end

  defp is_nan_f64(<<bits::unsigned-64-little>>) do
    exponent = bits |> Bitwise.bsr(52) |> Bitwise.band(0x7FF)
    exponent == 0x7FF and Bitwise.band(bits, 0xFFFFFFFFFFFFF) != 0
  end

  test "argmax honours tie_break" do
    tensor = tensor!([5, 1, 5, 5], "s32", {4})
    assert values!(ok!(NIF.reduce(:argmax, tensor, nil, false, :low))) == [0]
    assert values!(ok!(NIF.reduce(:argmax, tensor, nil, false, :high))) == [3]
  end

  test "bad requests are errors naming the op" do
    tensor = tensor!([1, 2], "s32", {2})
    assert {:error, message} = NIF.reduce(:sum, tensor, [3], false, :low)
    assert message =~ "sum"
    assert {:error, message} = NIF.reduce(:median, tensor, nil, false, :low)
    assert message =~ "median"
    assert {:error, message} = NIF.reduce(:argmax, tensor, nil, false, :middle)
    assert message =~ "tie_break"
    empty = tensor!([], "s32", {0})
    assert {:error, message} = NIF.reduce(:reduce_max, empty, nil, false, :low)
    assert message =~ "reduce_max"
  end

  # Null arm: the comparison above rejects a result that is off by one in one element.
  test "a perturbed reduction result is rejected by the reference" do
    values = [1, 2, 3, 4, 5, 6]
    result = values!(ok!(NIF.reduce(:sum, tensor!(values, "s32", {2, 3}), [1], false, :low)))
    [first | rest] = reference(values, {2, 3}, [1], &Enum.sum/1)
    assert result == [first | rest]
    refute result == [first + 1 | rest]
  end
end
