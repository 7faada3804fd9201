defmodule Nx.Vulkan.MovementTest do
  use ExUnit.Case, async: true
  import NxVulkan.TestHelpers
  alias Nx.Vulkan.NIF

  # Each test draws random shapes (rank 0 to 3, sizes 1 to 4, some empty axes through pad
  # cropping) and checks the device result against `moved/5`, the host reference.

  setup do
    :rand.seed(:exsss, {7, 11, 13})
    :ok
  end

  defp random_tensor(shape) do
    values = random_integers(size(shape))
    {values, tensor!(values, "s32", shape)}
  end

  defp flip(coordinates, shape, axes) do
    for {c, axis} <- Enum.with_index(coordinates),
        do: if(axis in axes, do: elem(shape, axis) - 1 - c, else: c)
  end

  test "reverse over random axes" do
    for _ <- 1..8 do
      shape = random_shape(:rand.uniform(4) - 1)
      {values, tensor} = random_tensor(shape)
      axes = Enum.filter(0..(tuple_size(shape) - 1)//1, fn _ -> :rand.uniform(2) == 1 end)
      expected = moved(values, shape, shape, nil, &flip(&1, shape, axes))
      assert values!(ok!(NIF.reverse(tensor, axes))) == expected
    end
  end

  test "strided slices with clamped starts" do
    for _ <- 1..8 do
      shape = random_shape(:rand.uniform(3), 5)
      {values, tensor} = random_tensor(shape)
      dimensions = Tuple.to_list(shape)
      lengths = Enum.map(dimensions, &:rand.uniform/1)
      steps = Enum.map(dimensions, fn _ -> :rand.uniform(3) end)
      # Starts past the end are clamped so the window fits, as Nx does.
      starts = Enum.map(dimensions, &(:rand.uniform(&1 + 2) - 1))

      clamped = Enum.zip_with([starts, dimensions, lengths], fn [s, d, l] -> min(s, d - l) end)

      output_shape =
        List.to_tuple(Enum.zip_with(lengths, steps, fn l, s -> div(l + s - 1, s) end))

      expected =
        moved(values, shape, output_shape, nil, fn coordinates ->
          Enum.zip_with([coordinates, clamped, steps], fn [c, start, step] -> start + c * step end)
        end)

      result = ok!(NIF.strided_slice(tensor, starts, lengths, steps))
      assert NIF.shape(result) == {:ok, output_shape}
      assert values!(result) == expected
    end
  end

  test "pad with low, high (negative crops) and interior padding" do
    for _ <- 1..8 do
      shape = random_shape(:rand.uniform(3))
      {values, tensor} = random_tensor(shape)
      fill = 77

      config =
        for _ <- Tuple.to_list(shape),
            do: {:rand.uniform(4) - 2, :rand.uniform(4) - 2, :rand.uniform(3) - 1}

      output_shape =
        Enum.zip_with(Tuple.to_list(shape), config, fn d, {low, high, interior} ->
          max(low + high + d + max(d - 1, 0) * interior, 0)
        end)
        |> List.to_tuple()

      expected =
        moved(values, shape, output_shape, fill, fn coordinates ->
          source =
            Enum.zip_with([coordinates, config, Tuple.to_list(shape)], fn [
                                                                            c,
                                                                            {low, _, interior},
                                                                            d
                                                                          ] ->
              position = c - low

              if position >= 0 and rem(position, interior + 1) == 0 and
                   div(position, interior + 1) < d,
                 do: div(position, interior + 1),
                 else: :fill
            end)

          if :fill in source, do: :fill, else: source
        end)

      result = ok!(NIF.pad(tensor, tensor!([fill], "s32", {}), config))
      assert NIF.shape(result) == {:ok, output_shape}
      assert values!(result) == expected
    end
  end

  test "concatenate and stack along every axis" do
    for rank <- 1..3, axis <- 0..(rank - 1) do
      shape = random_shape(rank)
      other_shape = put_elem(shape, axis, :rand.uniform(3))
      {left_values, left} = random_tensor(shape)
      {right_values, right} = random_tensor(other_shape)
      joined_shape = put_elem(shape, axis, elem(shape, axis) + elem(other_shape, axis))

      expected =
        for coordinates <- all_coordinates(joined_shape) do
          c = Enum.at(coordinates, axis)

          if c < elem(shape, axis),
            do: Enum.at(left_values, flat_index(coordinates, shape)),
            else:
              Enum.at(
                right_values,
                flat_index(List.replace_at(coordinates, axis, c - elem(shape, axis)), other_shape)
              )
        end

      assert values!(ok!(NIF.concatenate([left, right], axis))) == expected

      {twin_values, twin} = random_tensor(shape)
      stacked = ok!(NIF.stack([left, twin], axis))
      stacked_shape = shape |> Tuple.insert_at(axis, 2)
      assert NIF.shape(stacked) == {:ok, stacked_shape}

      expected_stack =
        for coordinates <- all_coordinates(stacked_shape) do
          {which, rest} = List.pop_at(coordinates, axis)
          Enum.at(if(which == 0, do: left_values, else: twin_values), flat_index(rest, shape))
        end

      assert values!(stacked) == expected_stack
    end
  end

  test "put_slice with clamped starts" do
    for _ <- 1..8 do
      shape = random_shape(:rand.uniform(3), 5)
      {values, tensor} = random_tensor(shape)
      update_shape = shape |> Tuple.to_list() |> Enum.map(&:rand.uniform/1) |> List.to_tuple()
      {update_values, update} = random_tensor(update_shape)
      starts = for d <- Tuple.to_list(shape), do: :rand.uniform(d + 2) - 2

      clamped =
        Enum.zip_with([starts, Tuple.to_list(shape), Tuple.to_list(update_shape)], fn [s, d, u] ->
          s |> max(0) |> min(d - u)
        end)

      expected =
        for coordinates <- all_coordinates(shape) do
          offset = Enum.zip_with(coordinates, clamped, &(&1 - &2))

          inside =
            Enum.zip_with(offset, Tuple.to_list(update_shape), &(&1 >= 0 and &1 < &2))
            |> Enum.all?()

          if inside,
            do: Enum.at(update_values, flat_index(offset, update_shape)),
            else: Enum.at(values, flat_index(coordinates, shape))
        end

      assert values!(ok!(NIF.put_slice(tensor, starts, update))) == expected
    end
  end

  # Nx's tensor starts may differ in type: one tensor per axis, each read in its own type (a
  # u64 above 2^63 clamps to the end; merged into s64 it would wrap to a negative start).
  test "slice_at and put_slice_as at per-axis tensor starts clamp each in its own type" do
    values = Enum.to_list(0..11)
    tensor = tensor!(values, "s32", {4, 3})
    huge = tensor!([9_223_372_036_854_775_813], "u64", {})
    negative = tensor!([-2], "s32", {})

    window = fn row, column ->
      moved(values, {4, 3}, {2, 2}, nil, fn [r, c] -> [r + row, c + column] end)
    end

    sliced = ok!(NIF.slice_at(tensor, [huge, negative], [2, 2], [1, 1]))
    assert values!(sliced) == window.(2, 0)
    # Null arm: the wrapped (negative, clamped to 0) row is another window.
    refute values!(sliced) == window.(0, 0)

    assert values!(ok!(NIF.slice_at(tensor, [1, tensor!([200], "u8", {})], [2, 2], [1, 1]))) ==
             window.(1, 1)

    stacked = tensor!([1, 5], "s64", {2})
    assert values!(ok!(NIF.slice_at(tensor, stacked, [2, 2], [1, 1]))) == window.(1, 1)

    update = tensor!([-1, -2, -3, -4], "s32", {2, 2})
    put = ok!(NIF.put_slice_as(tensor, [huge, tensor!([200], "u8", {})], update, "s32"))
    # Row 2 (clamped from 2^63 + 5) and column 1 (clamped from 200).
    expected =
      Enum.reduce([{7, -1}, {8, -2}, {10, -3}, {11, -4}], values, fn {at, v}, acc ->
        List.replace_at(acc, at, v)
      end)

    assert values!(put) == expected

    assert {:error, message} =
             NIF.slice_at(tensor, [huge, tensor!([0.5], "f32", {})], [2, 2], [1, 1])

    assert message =~ "slice"
  end

  test "contiguous materialises a transposed view in row-major order" do
    {values, tensor} = random_tensor({2, 3})
    transposed = ok!(NIF.transpose(tensor, [1, 0]))
    assert {:error, _} = NIF.reshape(transposed, {6})
    materialised = ok!(NIF.contiguous(transposed))
    expected = moved(values, {2, 3}, {3, 2}, nil, fn [i, j] -> [j, i] end)
    assert values!(ok!(NIF.reshape(materialised, {6}))) == expected
  end

  test "bad operands are errors naming the op" do
    {_, tensor} = random_tensor({2, 2})
    {_, other} = random_tensor({3})
    assert {:error, message} = NIF.concatenate([tensor, other], 0)
    assert message =~ "concatenate"
    assert {:error, message} = NIF.reverse(tensor, [5])
    assert message =~ "reverse"
    assert {:error, message} = NIF.pad(tensor, tensor, [{0, 0, 0}, {0, 0, 0}])
    assert message =~ "pad"
    assert {:error, message} = NIF.pad(tensor, tensor!([0], "s32", {}), [{0, 0, -1}, {0, 0, 0}])
    assert message =~ "negative"
  end

  # Null arm: the reference tells a wrong movement apart (reverse is not the identity).
  test "a perturbed movement result is rejected by the reference" do
    values = [1, 2, 3, 4]
    result = values!(ok!(NIF.reverse(tensor!(values, "s32", {4}), [0])))
    assert result == moved(values, {4}, {4}, nil, &flip(&1, {4}, [0]))
    refute result == moved(values, {4}, {4}, nil, & &1)
  end
end
