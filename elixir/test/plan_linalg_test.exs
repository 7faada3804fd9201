defmodule Nx.Vulkan.PlanLinalgTest do
  use ExUnit.Case, async: false
  import NxVulkan.TestHelpers
  alias Nx.Vulkan.NIF

  # plan_run/2 on a graph encoded by hand with the Fourier-transform, triangular-solve and
  # linear-algebra tags (39-42, and 15 for tuple elements; crates/nxvk-fusion/src/
  # encoding.rs), which `Nx.Vulkan.GraphEncoding` writes for `fft`, `ifft`,
  # `triangular_solve` and the `Nx.Block.LinAlg` blocks: each output equals the eager NIF op
  # byte for byte (both run the same catalog kernel). Runs without Nx (the CI mode).

  defp u32(value), do: <<value::unsigned-little-32>>
  defp text(string), do: [u32(byte_size(string)), string]
  defp list(items), do: [u32(length(items)), Enum.map(items, &<<&1::unsigned-little-64>>)]
  defp ids(items), do: [u32(length(items)), Enum.map(items, &u32/1)]

  # Parameters a [2, 3, 3], b [2, 3, 2], x [2, 5] (f64); the outputs, in order: fft(x, 8)
  # and ifft(x, 3) on axis 1, triangular_solve(a, b, lower, left side, transposed), cholesky
  # (a), solve(a, b), determinant(a), qr(b) reduced (q, r), lu(a)'s p (in f64) and u, and
  # eigh(a)'s eigenvalues.
  defp graph(transpose_a) do
    nodes = [
      [<<0>>, text("f64"), list([2, 3, 3])],
      [<<0>>, text("f64"), list([2, 3, 2])],
      [<<0>>, text("f64"), list([2, 5])],
      [<<39>>, u32(2), u32(8), u32(1)],
      [<<40>>, u32(2), u32(3), u32(1)],
      [<<41>>, u32(0), u32(1), <<1, 1, transpose_a>>],
      [<<42>>, text("cholesky"), ids([0])],
      [<<42>>, text("solve"), ids([0, 1])],
      [<<42>>, text("determinant"), ids([0])],
      [<<42>>, text("qr_reduced"), ids([1])],
      [<<15>>, u32(9), u32(0)],
      [<<15>>, u32(9), u32(1)],
      [<<42>>, text("lu"), ids([0])],
      [<<15>>, u32(12), u32(0)],
      [<<15>>, u32(12), u32(2)],
      [<<42>>, text("eigh"), ids([0])],
      [<<15>>, u32(15), u32(0)]
    ]

    outputs = [3, 4, 5, 6, 7, 8, 10, 11, 13, 14, 16]
    IO.iodata_to_binary(["NXVKGRPH", u32(1), u32(length(nodes)), nodes, ids(outputs)])
  end

  # Symmetric positive definite matrices: m + m^T + 8 I.
  defp spd(values) do
    for batch <- 0..1, row <- 0..2, column <- 0..2 do
      at = fn r, c -> Enum.at(values, batch * 9 + r * 3 + c) end
      at.(row, column) + at.(column, row) + if(row == column, do: 8.0, else: 0.0)
    end
  end

  defp bytes!(tensor), do: ok!(NIF.to_binary(tensor))

  test "fft, triangular_solve and the linear-algebra nodes run the eager kernels" do
    :rand.seed(:exsss, {8, 9, 10})
    random = fn count -> for _ <- 1..count, do: :rand.uniform() * 2 - 1 end
    a = tensor!(spd(random.(18)), "f64", {2, 3, 3})
    b = tensor!(random.(12), "f64", {2, 3, 2})
    x = tensor!(random.(10), "f64", {2, 5})
    outputs = ok!(NIF.plan_run(graph(1), [a, b, x]))
    {q, r} = ok!(NIF.qr(b, false))
    {p, _l, u} = ok!(NIF.lu(a))
    {eigenvalues, _vectors} = ok!(NIF.eigh(a))

    expected = [
      ok!(NIF.fft(:fft, x, 8, 1)),
      ok!(NIF.fft(:ifft, x, 3, 1)),
      ok!(NIF.triangular_solve(a, b, true, true, true)),
      ok!(NIF.cholesky(a)),
      ok!(NIF.solve(a, b)),
      ok!(NIF.determinant(a)),
      q,
      r,
      ok!(NIF.as_type(p, "f64")),
      u,
      eigenvalues
    ]

    assert length(outputs) == length(expected)

    for {output, wanted} <- Enum.zip(outputs, expected) do
      assert ok!(NIF.shape(output)) == ok!(NIF.shape(wanted))
      assert ok!(NIF.dtype(output)) == ok!(NIF.dtype(wanted))
      assert bytes!(output) == bytes!(wanted)
    end

    # Null arm: without transform_a the solve differs from the eager transposed solve.
    [_, _, plain | _] = ok!(NIF.plan_run(graph(0), [a, b, x]))
    refute bytes!(plain) == bytes!(Enum.at(expected, 2))
  end

  test "malformed linear-algebra nodes are errors" do
    a = tensor!(List.duplicate(1.0, 6), "f64", {2, 3})

    bad = fn node ->
      nodes = [[<<0>>, text("f64"), list([2, 3])], node]
      IO.iodata_to_binary(["NXVKGRPH", u32(1), u32(2), nodes, ids([1])])
    end

    assert {:error, message} = NIF.plan_run(bad.([<<42>>, text("cholesky"), ids([0])]), [a])
    assert message =~ "cholesky"
    assert {:error, _} = NIF.plan_run(bad.([<<42>>, text("svd"), ids([0])]), [a])
    assert {:error, _} = NIF.plan_run(bad.([<<39>>, u32(0), u32(0), u32(1)]), [a])
    assert {:error, _} = NIF.plan_run(bad.([<<15>>, u32(0), u32(0)]), [a])
  end
end
