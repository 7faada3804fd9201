defmodule Nx.Vulkan.PlanTest do
  use ExUnit.Case, async: false
  import NxVulkan.TestHelpers
  alias Nx.Vulkan.NIF

  # plan_run/2 on graphs encoded by hand in nxvk-fusion's format (crates/nxvk-fusion/src/
  # encoding.rs), against host references; the fusion counters show a graph is planned once.

  defp u32(value), do: <<value::unsigned-little-32>>
  defp text(string), do: [u32(byte_size(string)), string]
  defp list(items), do: [u32(length(items)), Enum.map(items, &<<&1::unsigned-little-64>>)]

  # parameters x, y (f32, shape); out = exp(x) * y + x
  defp graph(shape) do
    dims = Tuple.to_list(shape)

    nodes = [
      [<<0>>, text("f32"), list(dims)],
      [<<0>>, text("f32"), list(dims)],
      [<<3>>, text("exp"), u32(0)],
      [<<4>>, text("multiply"), u32(2), u32(1)],
      [<<4>>, text("add"), u32(3), u32(0)]
    ]

    IO.iodata_to_binary(["NXVKGRPH", u32(1), u32(length(nodes)), nodes, u32(1), u32(4)])
  end

  defp counters, do: ok!(NIF.plan_counters())

  test "a fused graph equals its host reference and is planned once per signature" do
    :rand.seed(:exsss, {5, 6, 7})
    shape = {4, 3}
    bytes = graph(shape)

    for round <- 1..3 do
      xs = for _ <- 1..12, do: :rand.uniform() * 2 - 1
      ys = for _ <- 1..12, do: :rand.uniform() * 2 - 1
      before = counters()
      [out] = ok!(NIF.plan_run(bytes, [tensor!(xs, "f32", shape), tensor!(ys, "f32", shape)]))
      after_run = counters()

      expected = Enum.zip_with(xs, ys, fn x, y -> :math.exp(x) * y + x end)

      close? = fn actual ->
        Enum.zip(actual, expected) |> Enum.all?(fn {a, e} -> abs(a - e) < 1.0e-5 end)
      end

      assert close?.(values!(out))
      # Null arm: the same tolerance rejects a result off by 1e-3 in one element.
      refute close?.([hd(values!(out)) + 1.0e-3 | tl(values!(out))])

      assert after_run.runs == before.runs + 1
      if round > 1, do: assert(after_run.traces == before.traces)
      if round > 1, do: assert(after_run.cache_hits == before.cache_hits + 1)
    end
  end

  test "malformed graphs and wrong inputs are errors" do
    assert {:error, message} = NIF.plan_run("not a graph", [])
    assert is_binary(message)
    x = tensor!([1.0, 2.0], "f32", {2})
    assert {:error, _} = NIF.plan_run(graph({2}), [x])
    assert {:error, _} = NIF.plan_run(binary_part(graph({2}), 0, 30), [x, x])
  end
end
