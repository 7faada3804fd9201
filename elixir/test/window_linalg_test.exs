defmodule Nx.Vulkan.WindowLinalgTest do
  # The window and linear-algebra NIFs against host references on random inputs, without Nx.
  use ExUnit.Case, async: true
  import NxVulkan.TestHelpers
  alias Nx.Vulkan.NIF

  ## Window ops

  # Input coordinates that window `window` (output coordinates) covers, in row-major window
  # order; `nil` for a position in the padding.
  defp window_positions(window, shape, dims, strides, padding, dilations) do
    all_coordinates(List.to_tuple(dims))
    |> Enum.map(fn offsets ->
      coordinates =
        for {{o, k}, axis} <- Enum.with_index(Enum.zip(window, offsets)) do
          {low, _high} = Enum.at(padding, axis)
          o * Enum.at(strides, axis) + k * Enum.at(dilations, axis) - low
        end

      in_range =
        coordinates
        |> Enum.zip(Tuple.to_list(shape))
        |> Enum.all?(fn {c, s} -> c >= 0 and c < s end)

      if in_range, do: coordinates
    end)
  end

  defp output_shape(shape, dims, strides, padding, dilations) do
    for {{size, dim}, axis} <- Enum.with_index(Enum.zip(Tuple.to_list(shape), dims)) do
      {low, high} = Enum.at(padding, axis)
      dilated = (dim - 1) * Enum.at(dilations, axis) + 1
      div(size + low + high - dilated, Enum.at(strides, axis)) + 1
    end
    |> List.to_tuple()
  end

  defp random_geometry(rank) do
    shape = List.to_tuple(for _ <- 1..rank//1, do: :rand.uniform(4) + 1)
    dims = for size <- Tuple.to_list(shape), do: :rand.uniform(min(size, 2))
    strides = for _ <- 1..rank//1, do: :rand.uniform(2)
    padding = for _ <- 1..rank//1, do: {:rand.uniform(2) - 1, :rand.uniform(2) - 1}
    dilations = for _ <- dims, do: 1
    {shape, dims, strides, padding, dilations}
  end

  # The padding value of each op on s32 (the type's limits for max and min).
  @identities %{
    window_sum: 0,
    window_product: 1,
    window_max: -2_147_483_648,
    window_min: 2_147_483_647
  }
  @folds %{
    window_sum: &Enum.sum/1,
    window_product: &Enum.product/1,
    window_max: &Enum.max/1,
    window_min: &Enum.min/1
  }

  defp window_reference(op, values, geometry) do
    {shape, dims, strides, padding, dilations} = geometry

    for window <- all_coordinates(output_shape(shape, dims, strides, padding, dilations)) do
      window
      |> window_positions(shape, dims, strides, padding, dilations)
      |> Enum.map(fn
        nil -> @identities[op]
        coordinates -> Enum.at(values, flat_index(coordinates, shape))
      end)
      |> @folds[op].()
    end
  end

  defp options({_shape, _dims, strides, padding, dilations}),
    do: %{strides: strides, padding: padding, window_dilations: dilations}

  test "window_sum/product/max/min on random s32 tensors match the host" do
    :rand.seed(:exsss, {7, 8, 9})

    for op <- [:window_sum, :window_product, :window_max, :window_min], _trial <- 1..4 do
      {shape, dims, _, _, _} = geometry = random_geometry(:rand.uniform(3))
      # Values near zero keep products inside s32.
      values = for _ <- 1..size(shape), do: :rand.uniform(5) - 3
      tensor = tensor!(values, "s32", shape)
      result = ok!(NIF.window_reduce(op, tensor, List.to_tuple(dims), options(geometry)))

      assert values!(result) == window_reference(op, values, geometry),
             "#{op} #{inspect(geometry)}"
    end
  end

  # Nx's select-and-scatter: the input is padded with `init`, each window adds its source value
  # at the position of its extreme (values here are distinct and never equal `init`, so ties
  # can only be between padding positions); a selection in the padding drops.
  defp scatter_reference(select, values, source, init, geometry) do
    {shape, dims, strides, padding, dilations} = geometry
    pick = if select == :window_scatter_max, do: &Enum.max_by/2, else: &Enum.min_by/2
    windows = all_coordinates(output_shape(shape, dims, strides, padding, dilations))

    value_at = fn
      nil -> init
      position -> Enum.at(values, flat_index(position, shape))
    end

    windows
    |> Enum.zip(source)
    |> Enum.reduce(List.duplicate(init, length(values)), fn {window, contribution}, acc ->
      positions = window_positions(window, shape, dims, strides, padding, dilations)

      case pick.(positions, value_at) do
        nil -> acc
        chosen -> List.update_at(acc, flat_index(chosen, shape), &(&1 + contribution))
      end
    end)
  end

  test "window_scatter_max/min on random s32 tensors match the host" do
    :rand.seed(:exsss, {4, 5, 6})

    for select <- [:window_scatter_max, :window_scatter_min], _trial <- 1..4 do
      {shape, dims, strides, padding, dilations} = geometry = random_geometry(:rand.uniform(3))
      values = Enum.shuffle(1..size(shape)) |> Enum.map(&(&1 * 3 - 20))
      pooled = output_shape(shape, dims, strides, padding, dilations)
      source = for _ <- 1..size(pooled)//1, do: :rand.uniform(9)

      result =
        NIF.window_scatter(
          select,
          tensor!(values, "s32", shape),
          tensor!(source, "s32", pooled),
          tensor!([2], "s32", {}),
          List.to_tuple(dims),
          options(geometry)
        )

      assert values!(ok!(result)) == scatter_reference(select, values, source, 2, geometry),
             "#{select} #{inspect(geometry)}"
    end
  end

  test "window ops reject unknown names and mismatched sources" do
    tensor = tensor!([1, 2, 3], "s32", {3})
    options = %{strides: [1], padding: [{0, 0}], window_dilations: [1]}
    assert {:error, message} = NIF.window_reduce(:window_mean, tensor, {2}, options)
    assert message =~ "window_mean"
    source = tensor!([1], "s32", {1})
    init = tensor!([0], "s32", {})

    assert {:error, message} =
             NIF.window_scatter(:window_scatter_max, tensor, source, init, {2}, options)

    assert message =~ "window_scatter_max"
  end

  ## Linear algebra (f64; results checked by their defining identities on the host)

  defp matrix(rows), do: tensor!(List.flatten(rows), "f64", {length(rows), length(hd(rows))})

  defp rows!(tensor) do
    {:ok, {_m, n}} = NIF.shape(tensor)
    tensor |> values!() |> Enum.chunk_every(n)
  end

  defp transpose(rows), do: rows |> Enum.zip() |> Enum.map(&Tuple.to_list/1)

  defp multiply(a, b) do
    columns = transpose(b)
    for row <- a, do: for(column <- columns, do: dot(row, column))
  end

  defp dot(x, y), do: x |> Enum.zip(y) |> Enum.map(fn {p, q} -> p * q end) |> Enum.sum()

  defp close?(a, b, tolerance \\ 1.0e-9) do
    a
    |> List.flatten()
    |> Enum.zip(List.flatten(b))
    |> Enum.all?(fn {p, q} -> abs(p - q) <= tolerance end)
  end

  defp random_matrix(m, n), do: for(_ <- 1..m, do: for(_ <- 1..n, do: :rand.uniform() * 2 - 1))

  defp triangle(rows, lower) do
    for {row, i} <- Enum.with_index(rows) do
      for {value, j} <- Enum.with_index(row) do
        cond do
          i == j -> 2 + abs(value)
          lower == j < i -> value
          true -> 0.0
        end
      end
    end
  end

  test "triangular_solve on random f64 systems satisfies op(a) x = b or x op(a) = b" do
    :rand.seed(:exsss, {1, 1, 2})

    for lower <- [true, false], left_side <- [true, false], transpose_a <- [true, false] do
      n = :rand.uniform(5)
      a = triangle(random_matrix(n, n), lower)
      b = random_matrix(n, 3) |> then(&if(left_side, do: &1, else: transpose(&1)))
      x = rows!(ok!(NIF.triangular_solve(matrix(a), matrix(b), lower, left_side, transpose_a)))
      op_a = if transpose_a, do: transpose(a), else: a
      product = if left_side, do: multiply(op_a, x), else: multiply(x, op_a)
      assert close?(product, b), "lower #{lower} left #{left_side} transpose #{transpose_a}"
    end
  end

  test "cholesky, lu, solve, determinant, qr and eigh satisfy their identities" do
    :rand.seed(:exsss, {3, 1, 4})
    n = 4
    r = random_matrix(n, n)
    # Symmetric positive definite: r r^T + n I.
    spd =
      for {row, i} <- Enum.with_index(multiply(r, transpose(r))) do
        for {value, j} <- Enum.with_index(row), do: if(i == j, do: value + n, else: value)
      end

    l = rows!(ok!(NIF.cholesky(matrix(spd))))
    assert close?(multiply(l, transpose(l)), spd)
    assert l == triangle_zeroes(l)

    {p, lower, upper} = ok!(NIF.lu(matrix(r)))

    p =
      p |> values!() |> Enum.chunk_every(n) |> Enum.map(fn row -> Enum.map(row, &(&1 * 1.0)) end)

    assert close?(multiply(p, multiply(rows!(lower), rows!(upper))), r)

    b = random_matrix(n, 2)
    x = rows!(ok!(NIF.solve(matrix(r), matrix(b))))
    assert close?(multiply(r, x), b)

    [determinant] = values!(ok!(NIF.determinant(matrix(spd))))
    # det(L)^2 = det(spd) for the Cholesky factor.
    diagonal_product =
      l |> Enum.with_index() |> Enum.map(fn {row, i} -> Enum.at(row, i) end) |> Enum.product()

    assert abs(determinant - diagonal_product * diagonal_product) <= 1.0e-8 * abs(determinant)

    {q, upper_r} = ok!(NIF.qr(matrix(r), false))
    assert close?(multiply(rows!(q), rows!(upper_r)), r)
    assert close?(multiply(transpose(rows!(q)), rows!(q)), identity(n))

    {values, vectors} = ok!(NIF.eigh(matrix(spd)))
    values = values!(values)
    vectors = rows!(vectors)
    assert values == Enum.sort(values)

    assert close?(
             multiply(spd, vectors),
             for(row <- vectors, do: Enum.zip_with(row, values, &(&1 * &2))),
             1.0e-8
           )
  end

  defp triangle_zeroes(rows) do
    for {row, i} <- Enum.with_index(rows),
        do: for({v, j} <- Enum.with_index(row), do: if(j > i, do: 0.0, else: v))
  end

  defp identity(n), do: for(i <- 1..n, do: for(j <- 1..n, do: if(i == j, do: 1.0, else: 0.0)))

  test "linear algebra rejects non-square and mismatched operands with the op's name" do
    assert {:error, message} = NIF.cholesky(matrix([[1.0, 2.0, 3.0]]))
    assert message =~ "cholesky"

    assert {:error, message} =
             NIF.triangular_solve(matrix([[1.0]]), matrix([[1.0], [2.0]]), true, true, false)

    assert message =~ "triangular_solve"
  end

  # Null arms: the references above reject a result off in one element.
  test "a perturbed window or solve result is rejected by the references" do
    values = [3, 1, 4, 1, 5, 9]
    geometry = {{6}, [2], [1], [{0, 0}], [1]}

    result =
      values!(
        ok!(NIF.window_reduce(:window_sum, tensor!(values, "s32", {6}), {2}, options(geometry)))
      )

    [first | rest] = window_reference(:window_sum, values, geometry)
    assert result == [first | rest]
    refute result == [first + 1 | rest]

    a = [[2.0, 0.0], [1.0, 3.0]]
    b = [[4.0], [5.0]]
    x = rows!(ok!(NIF.triangular_solve(matrix(a), matrix(b), true, true, false)))
    assert close?(multiply(a, x), b)
    refute close?(multiply(a, [[hd(hd(x)) + 1.0e-6] | tl(x)]), b)
  end
end
