defmodule Nx.Vulkan.HostFallbackTest do
  # Reads and sets VM-wide counters and strict mode: runs alone, after the async tests.
  use ExUnit.Case, async: false
  alias Nx.Vulkan.NIF

  defp count(op, dtype) do
    Nx.Vulkan.counters().host_fallbacks
    |> Enum.find_value(0, fn
      %{op: ^op, dtype: ^dtype, count: count} -> count
      _ -> nil
    end)
  end

  test "the gate counts each fallback by op and dtype" do
    before = count("window_sum", "f32")

    Nx.Vulkan.with_strict(:allow, fn ->
      assert :ok = NIF.host_fallback(:window_sum, "f32", [{2, 3}], nil)
      assert :ok = NIF.host_fallback("window_sum", "f32", [{2, 3}], :allow)
    end)

    assert count("window_sum", "f32") == before + 2
    # Null arm: the check can fail (the count moved).
    refute count("window_sum", "f32") == before
  end

  test "the VM-wide :raise refuses, and the refusal is counted and names op, dtype and shapes" do
    before = count("window_max", "s32")

    Nx.Vulkan.with_strict(:raise, fn ->
      assert {:error, message} = NIF.host_fallback(:window_max, "s32", [{4, 5}], :allow)
      assert message =~ "window_max"
      assert message =~ "s32"
      assert message =~ "[4, 5]"
    end)

    assert count("window_max", "s32") == before + 1
  end

  test "a process scope refuses where the VM allows, and only in that process" do
    Nx.Vulkan.with_strict(:allow, fn ->
      Nx.Vulkan.with_process_strict(:raise, fn ->
        assert Nx.Vulkan.process_strict() == :raise

        error = assert_raise RuntimeError, fn -> Nx.Vulkan.host_fallback!(:sort, "f32", [{3}]) end
        assert error.message =~ "sort"

        # Another process has no scope: its fallback runs.
        assert Task.async(fn -> Nx.Vulkan.host_fallback!(:sort, "f32", [{3}]) end) |> Task.await() ==
                 :ok
      end)

      assert Nx.Vulkan.process_strict() == nil
      assert Nx.Vulkan.host_fallback!(:sort, "f32", [{3}]) == :ok
    end)
  end

  test "with_fallback_count counts this process's backend fallbacks" do
    Nx.Vulkan.with_strict(:allow, fn ->
      {result, taken} =
        Nx.Vulkan.with_fallback_count(fn ->
          Nx.Vulkan.host_fallback!(:dot, "f32", [{2, 2}, {2, 2}])
          Nx.Vulkan.host_fallback!(:dot, "f32", [{2, 2}, {2, 2}])
          :done
        end)

      assert {result, taken} == {:done, 2}
      assert {:done, 0} == Nx.Vulkan.with_fallback_count(fn -> :done end)
    end)
  end

  test "op_path answers from the catalog's planners where an op would run" do
    assert NIF.op_path(:binary, :add, ["f32", "f32"]) == {:ok, :gpu}
    assert NIF.op_path(:binary, :add, ["c64", "c64"]) == {:ok, :gpu}
    assert NIF.op_path(:unary, :negate, ["s16"]) == {:ok, :gpu}
    # Sub-byte operands run on the GPU through wider integers, except ops whose result
    # depends on the width.
    assert NIF.op_path(:unary, :negate, ["u4"]) == {:ok, :gpu}
    assert NIF.op_path(:binary, :add, ["s4", "s4"]) == {:ok, :gpu}
    assert NIF.op_path(:unary, :population_count, ["u4"]) == {:ok, {:host, "u4"}}
    assert NIF.op_path(:reduce, :sum, ["f32"]) == {:ok, :gpu}
    assert NIF.op_path(:reduce, :sum, ["c64"]) == {:ok, :gpu}
    assert NIF.op_path(:reduce, :sum, ["u4"]) == {:ok, {:host, "u4"}}
    assert {:error, message} = NIF.op_path(:binary, :add, ["f32"])
    assert message =~ "op_path"
    assert {:error, message} = NIF.op_path(:unary, :frobnicate, ["f32"])
    assert message =~ "frobnicate"
  end

  test "a process :raise scope refuses a catalog fallback before the op runs" do
    Nx.Vulkan.with_strict(:allow, fn ->
      before = count("sum", "u4")

      Nx.Vulkan.with_process_strict(:raise, fn ->
        error =
          assert_raise RuntimeError, fn ->
            Nx.Vulkan.check_catalog_path!(:reduce, :sum, ["u4"], [{2}])
          end

        assert error.message =~ "sum"
        assert :ok = Nx.Vulkan.check_catalog_path!(:reduce, :sum, ["f32"], [{2}])
      end)

      # The refusal is counted once; without a scope the check does nothing.
      assert count("sum", "u4") == before + 1
      assert :ok = Nx.Vulkan.check_catalog_path!(:reduce, :sum, ["u4"], [{2}])
      assert count("sum", "u4") == before + 1
    end)
  end

  test "bad gate arguments are errors, not crashes" do
    assert {:error, message} = NIF.host_fallback(:"Not An Op!", "f32", [], nil)
    assert message =~ "not an op name"
    assert {:error, message} = NIF.host_fallback(:dot, "f33", [], nil)
    assert message =~ "f33"
    assert {:error, message} = NIF.host_fallback(:dot, "f32", [], :sometimes)
    assert message =~ "sometimes"
  end
end
