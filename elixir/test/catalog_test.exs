defmodule Nx.Vulkan.CatalogTest do
  use ExUnit.Case, async: true
  import NxVulkan.TestHelpers
  alias Nx.Vulkan.NIF

  # The NIFs of the catalog's non-elementwise families (selection, scans, dot, indexing,
  # sorting, creation, FFT) against host references written here in plain Elixir, on random
  # inputs. Each comparison goes through `matches!/2`, whose null arm checks that the same
  # comparison rejects a perturbed reference, so no check here can pass vacuously.

  setup do
    :rand.seed(:exsss, {3, 5, 8})
    :ok
  end

  defp matches!(result, expected) do
    assert result == expected

    case expected do
      [first | rest] -> refute result == [perturb(first) | rest]
      [] -> refute result == [0]
    end
  end

  defp perturb({re, im}), do: {re + 1, im}
  defp perturb(value), do: value + 1

  defp rows(values, length), do: Enum.chunk_every(values, max(length, 1))

  test "select and clip follow the predicate and the bounds, including scalars and empty" do
    for shape <- [{}, {0}, {5}, {3, 4}] do
      n = size(shape)
      predicate = for _ <- 1..n//1, do: :rand.uniform(2) - 1
      on_true = random_integers(n)
      on_false = random_integers(n)

      result =
        ok!(
          NIF.select(
            tensor!(predicate, "u8", shape),
            tensor!(on_true, "s32", shape),
            tensor!(on_false, "s32", shape)
          )
        )

      expected =
        Enum.zip_with([predicate, on_true, on_false], fn [p, t, f] ->
          if p != 0, do: t, else: f
        end)

      matches!(values!(result), expected)

      clipped =
        ok!(
          NIF.clip(
            tensor!(on_true, "s32", shape),
            tensor!([-100], "s32", {}),
            tensor!([250], "s32", {})
          )
        )

      matches!(values!(clipped), Enum.map(on_true, &(&1 |> max(-100) |> min(250))))
    end
  end

  test "cumulative sums and maxima along either axis, both directions" do
    for {rows_count, columns} <- [{3, 5}, {1, 7}, {4, 1}],
        axis <- [0, 1],
        reverse <- [false, true] do
      values = random_integers(rows_count * columns, 50)
      shape = {rows_count, columns}
      input = tensor!(values, "s32", shape)

      for {name, combine} <- [cumulative_sum: &+/2, cumulative_max: &max/2] do
        lines = if axis == 1, do: rows(values, columns), else: transpose(rows(values, columns))

        scanned =
          Enum.map(lines, fn line ->
            line = if reverse, do: Enum.reverse(line), else: line
            [first | rest] = line
            out = Enum.scan(rest, first, combine) |> then(&[first | &1])
            if reverse, do: Enum.reverse(out), else: out
          end)

        expected = if axis == 1, do: List.flatten(scanned), else: List.flatten(transpose(scanned))
        matches!(values!(ok!(NIF.cumulative(name, input, axis, reverse))), expected)
      end
    end
  end

  defp transpose(matrix), do: matrix |> Enum.zip() |> Enum.map(&Tuple.to_list/1)

  test "dot contracts the shared axis (matrix product, batched and not)" do
    for {m, k, n} <- [{1, 1, 1}, {3, 4, 5}, {7, 2, 3}] do
      a = random_integers(m * k, 20)
      b = random_integers(k * n, 20)

      expected =
        for row <- rows(a, k),
            column <- transpose(rows(b, n)),
            do: Enum.zip_with(row, column, &*/2) |> Enum.sum()

      result =
        ok!(NIF.dot(tensor!(a, "s32", {m, k}), [1], [], tensor!(b, "s32", {k, n}), [0], []))

      assert NIF.shape(result) == {:ok, {m, n}}
      matches!(values!(result), expected)

      # The same product with a batch axis of 1 on both sides.
      batched =
        ok!(
          NIF.dot(tensor!(a, "s32", {1, m, k}), [2], [0], tensor!(b, "s32", {1, k, n}), [1], [0])
        )

      matches!(values!(batched), expected)
    end
  end

  test "gather, take and indexed_add address the rows the indices name" do
    {height, width} = {4, 3}
    values = random_integers(height * width)
    input = tensor!(values, "s32", {height, width})
    table = List.to_tuple(values)
    coordinates = for _ <- 1..6, do: [:rand.uniform(height) - 1, :rand.uniform(width) - 1]

    gathered = ok!(NIF.gather(input, tensor!(List.flatten(coordinates), "s32", {6, 2}), nil))

    matches!(
      values!(gathered),
      Enum.map(coordinates, fn [r, c] -> elem(table, r * width + c) end)
    )

    picked = for _ <- 1..5, do: :rand.uniform(height) - 1
    taken = ok!(NIF.take(input, tensor!(picked, "s32", {5}), 0))
    matches!(values!(taken), Enum.flat_map(picked, &Enum.slice(values, &1 * width, width)))

    target = random_integers(height)
    updates = random_integers(5)

    added =
      ok!(
        NIF.indexed_add(
          tensor!(target, "s32", {height}),
          tensor!(picked, "s32", {5, 1}),
          tensor!(updates, "s32", {5}),
          nil
        )
      )

    expected =
      Enum.zip(picked, updates)
      |> Enum.reduce(List.to_tuple(target), fn {i, u}, acc ->
        put_elem(acc, i, elem(acc, i) + u)
      end)
      |> Tuple.to_list()

    matches!(values!(added), expected)
  end

  test "sort, argsort (stable) and top_k along the last axis" do
    for {count, length} <- [{1, 1}, {3, 9}, {2, 17}] do
      values = random_integers(count * length, 5)
      input = tensor!(values, "s32", {count, length})

      ascending = rows(values, length) |> Enum.flat_map(&Enum.sort/1)
      matches!(values!(ok!(NIF.sort(input, 1, :asc))), ascending)

      descending = rows(values, length) |> Enum.flat_map(&Enum.sort(&1, :desc))
      matches!(values!(ok!(NIF.sort(input, 1, :desc))), descending)

      positions =
        rows(values, length)
        |> Enum.flat_map(fn row ->
          row |> Enum.with_index() |> Enum.sort_by(&elem(&1, 0)) |> Enum.map(&elem(&1, 1))
        end)

      matches!(values!(ok!(NIF.argsort(input, 1, :asc, "s32"))), positions)

      k = min(3, length)
      {top_values, top_positions} = ok!(NIF.top_k(input, k))

      expected_top =
        rows(values, length)
        |> Enum.map(fn row ->
          row |> Enum.with_index() |> Enum.sort_by(&elem(&1, 0), :desc) |> Enum.take(k)
        end)

      matches!(values!(top_values), expected_top |> List.flatten() |> Enum.map(&elem(&1, 0)))
      matches!(values!(top_positions), expected_top |> List.flatten() |> Enum.map(&elem(&1, 1)))
    end
  end

  test "iota, eye and bitcast" do
    matches!(values!(ok!(NIF.iota("s32", {2, 3}, 1))), [0, 1, 2, 0, 1, 2])
    matches!(values!(ok!(NIF.iota("s64", {2, 3}, nil))), [0, 1, 2, 3, 4, 5])
    matches!(values!(ok!(NIF.eye("f32", {2, 3}))), [1.0, 0.0, 0.0, 0.0, 1.0, 0.0])

    floats = [1.5, -2.0, 0.0]
    bits = for <<word::signed-32-little <- encode(floats, "f32")>>, do: word
    matches!(values!(ok!(NIF.bitcast(tensor!(floats, "f32", {3}), "s32"))), bits)
    assert {:error, message} = NIF.bitcast(tensor!(floats, "f32", {3}), "s64")
    assert message =~ "bitcast"
  end

  test "fft of a real signal equals the direct DFT within f32 rounding" do
    for length <- [1, 4, 6] do
      signal = random_integers(length, 10) |> Enum.map(&(&1 * 1.0))
      spectrum = values!(ok!(NIF.fft(:fft, tensor!(signal, "f32", {length}), nil, 0)))

      expected =
        for k <- 0..(length - 1) do
          signal
          |> Enum.with_index()
          |> Enum.reduce({0.0, 0.0}, fn {x, t}, {re, im} ->
            angle = -2 * :math.pi() * k * t / length
            {re + x * :math.cos(angle), im + x * :math.sin(angle)}
          end)
        end

      close? = fn actual ->
        Enum.zip(actual, expected)
        |> Enum.all?(fn {{a, b}, {c, d}} -> abs(a - c) < 1.0e-3 and abs(b - d) < 1.0e-3 end)
      end

      assert close?.(spectrum)
      # Null arm: the same tolerance rejects a spectrum off by one in its first bin.
      refute close?.([perturb(hd(spectrum)) | tl(spectrum)])
    end
  end

  test "bad arguments are errors that name the op" do
    input = tensor!([1, 2, 3], "s32", {3})
    assert {:error, message} = NIF.sort(input, 0, :sideways)
    assert message =~ "sort"
    assert {:error, message} = NIF.cumulative(:cumulative_mean, input, 0, false)
    assert message =~ "cumulative"
    assert {:error, message} = NIF.dot(input, [0], [], tensor!([1, 2], "s32", {2}), [0], [])
    assert message =~ "dot"
    assert {:error, message} = NIF.fft(:fourier, input, nil, 0)
    assert message =~ "fft"
  end
end
