defmodule Nx.Vulkan.ConcurrencyTest do
  use ExUnit.Case, async: true
  # Lavapipe on a loaded 2-core machine is slow; ExUnit's default 60 s is too tight.
  @moduletag timeout: 300_000
  import NxVulkan.TestHelpers
  alias Nx.Vulkan.NIF

  @processes 32
  @rounds 20

  # Each process checks every result against values computed in Elixir.
  defp work(seed) do
    :rand.seed(:exsss, {seed, seed * 7, seed * 13})

    for round <- 1..@rounds do
      size = 1 + :rand.uniform(300)
      left = for _ <- 1..size, do: :rand.uniform(2_000) - 1_000
      right = for _ <- 1..size, do: :rand.uniform(2_000) - 1_000
      left_tensor = tensor!(left, "s32", {size})
      right_tensor = tensor!(right, "s32", {size})
      {op, fun} = Enum.at([add: &+/2, multiply: &*/2, subtract: &-/2], rem(round, 3))
      result = ok!(NIF.binary_op(op, left_tensor, right_tensor))
      expected = Enum.zip_with(left, right, fun)
      ^expected = values!(result)

      floats = ok!(NIF.as_type(result, "f32"))
      negated = ok!(NIF.unary_op(:negate, floats))
      ^expected = Enum.map(values!(negated), &(-trunc(&1)))

      # A reduction and a data-movement kernel on the same data.
      [total] = values!(ok!(NIF.reduce(:sum, result, nil, false, :low)))
      ^total = Enum.sum(expected)
      reversed = Enum.reverse(expected)
      ^reversed = values!(ok!(NIF.reverse(result, [0])))
    end

    :ok
  end

  test "#{@processes} processes running ops at once get correct results" do
    results =
      1..@processes
      |> Enum.map(fn seed -> Task.async(fn -> work(seed) end) end)
      |> Task.await_many(60_000)

    assert results == List.duplicate(:ok, @processes)
  end
end
