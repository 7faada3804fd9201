defmodule Nx.Vulkan.StrictTest do
  # Strict mode is VM-wide: runs alone, after the async tests.
  use ExUnit.Case, async: false
  import NxVulkan.TestHelpers
  alias Nx.Vulkan.NIF

  # Reductions of sub-byte types have no GPU kernel: they are the catalog fallback used here
  # (complex sums run on the GPU).
  defp u4_sum_count do
    Nx.Vulkan.counters().host_fallbacks
    |> Enum.find_value(0, fn
      %{op: "sum", dtype: "u4", count: count} -> count
      _ -> nil
    end)
  end

  test ":raise refuses a host fallback with an error naming op and dtype" do
    nibbles = tensor!([1, 15], "u4", {2})

    Nx.Vulkan.with_strict(:raise, fn ->
      assert Nx.Vulkan.strict() == :raise
      assert {:error, message} = NIF.reduce(:sum, nibbles, nil, false, :low)
      assert message =~ "sum"
      assert message =~ "u4"
    end)
  end

  test ":allow runs the fallback and counts it" do
    nibbles = tensor!([1, 15], "u4", {2})
    before = u4_sum_count()

    sum =
      Nx.Vulkan.with_strict(:allow, fn ->
        ok!(NIF.reduce(:sum, nibbles, nil, false, :low))
      end)

    assert values!(sum) == [16]
    assert u4_sum_count() == before + 1
    assert Nx.Vulkan.fallback_count() >= 1
  end

  test "with_strict restores the previous mode, even after a raise" do
    previous = Nx.Vulkan.strict()

    assert_raise RuntimeError, fn ->
      Nx.Vulkan.with_strict(:raise, fn -> raise "boom" end)
    end

    assert Nx.Vulkan.strict() == previous
    assert {:error, message} = NIF.set_strict(:sometimes)
    assert message =~ "sometimes"
  end
end
