defmodule Nx.Vulkan.StrictTest do
  # Strict mode is VM-wide: runs alone, after the async tests.
  use ExUnit.Case, async: false
  import NxVulkan.TestHelpers
  alias Nx.Vulkan.NIF

  defp c64_add_count do
    Nx.Vulkan.counters().host_fallbacks
    |> Enum.find_value(0, fn
      %{op: "add", dtype: "c64", count: count} -> count
      _ -> nil
    end)
  end

  test ":raise refuses a host fallback with an error naming op and dtype" do
    complex = tensor!([{1.0, 2.0}, {3.0, -1.0}], "c64", {2})

    Nx.Vulkan.with_strict(:raise, fn ->
      assert Nx.Vulkan.strict() == :raise
      assert {:error, message} = NIF.binary_op(:add, complex, complex)
      assert message =~ "add"
      assert message =~ "c64"
    end)
  end

  test ":allow runs the fallback and counts it" do
    complex = tensor!([{1.0, 2.0}, {3.0, -1.0}], "c64", {2})
    before = c64_add_count()

    sum =
      Nx.Vulkan.with_strict(:allow, fn ->
        ok!(NIF.binary_op(:add, complex, complex))
      end)

    assert values!(sum) == [{2.0, 4.0}, {6.0, -2.0}]
    assert c64_add_count() == before + 1
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
