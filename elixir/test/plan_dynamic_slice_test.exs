defmodule Nx.Vulkan.PlanDynamicSliceTest do
  use ExUnit.Case, async: false
  import NxVulkan.TestHelpers
  alias Nx.Vulkan.NIF

  # plan_run/2 on a hand-encoded graph (format version 2, crates/nxvk-fusion/src/encoding.rs)
  # with a slice and a put_slice whose starts are scalar parameters (tags 43 and 44), against
  # host index arithmetic: each start clamped as Nx clamps it, on the device. New start values
  # find the plan (its key holds shapes and types, not values).

  defp u32(value), do: <<value::unsigned-little-32>>
  defp text(string), do: [u32(byte_size(string)), string]
  defp list(items), do: [u32(length(items)), Enum.map(items, &<<&1::unsigned-little-64>>)]

  defp starts(starts) do
    [
      u32(length(starts)),
      Enum.map(starts, fn
        {:node, id} -> [<<1>>, u32(id)]
        value -> <<0, value::signed-little-64>>
      end)
    ]
  end

  # x f32 {4, 3}, row s32 {}, column u8 {}, update f32 {2, 2};
  # outputs: slice(x, [row, column], [2, 2]) and put_slice(x, [row, 5], update).
  defp graph do
    nodes = [
      [<<0>>, text("f32"), list([4, 3])],
      [<<0>>, text("s32"), list([])],
      [<<0>>, text("u8"), list([])],
      [<<0>>, text("f32"), list([2, 2])],
      [<<43>>, u32(0), starts([{:node, 1}, {:node, 2}]), list([2, 2]), list([1, 1])],
      [<<44>>, u32(0), u32(3), starts([{:node, 1}, 5])]
    ]

    IO.iodata_to_binary(["NXVKGRPH", u32(2), u32(length(nodes)), nodes, u32(2), u32(4), u32(5)])
  end

  defp clamp(start, size, length), do: start |> max(0) |> min(size - length)

  defp window(values, row, column) do
    moved(values, {4, 3}, {2, 2}, nil, fn [r, c] -> [r + row, c + column] end)
  end

  defp written(values, update, row, column) do
    patch = List.to_tuple(update)

    for [r, c] = at <- all_coordinates({4, 3}) do
      inside = (r - row) in 0..1 and (c - column) in 0..1

      if inside,
        do: elem(patch, (r - row) * 2 + (c - column)),
        else: Enum.at(values, flat_index(at, {4, 3}))
    end
  end

  defp counters, do: ok!(NIF.plan_counters())

  test "tensor starts are clamped on the device and new values hit the plan" do
    bytes = graph()
    values = Enum.map(0..11, &(&1 * 1.0))
    update = [-1.0, -2.0, -3.0, -4.0]
    x = tensor!(values, "f32", {4, 3})
    patch = tensor!(update, "f32", {2, 2})

    for {{row, column}, round} <- Enum.with_index([{1, 0}, {-3, 200}, {9, 1}, {2, 1}]) do
      before = counters()
      inputs = [x, tensor!([row], "s32", {}), tensor!([column], "u8", {}), patch]
      [sliced, put] = ok!(NIF.plan_run(bytes, inputs))
      after_run = counters()

      {r, c} = {clamp(row, 4, 2), clamp(column, 3, 2)}
      assert values!(sliced) == window(values, r, c)
      assert values!(put) == written(values, update, r, clamp(5, 3, 2))

      # Null arm: the same comparison rejects the window one row over.
      refute values!(sliced) == window(values, if(r == 0, do: 1, else: r - 1), c)

      assert after_run.runs == before.runs + 1
      if round > 0, do: assert(after_run.traces == before.traces)
      if round > 0, do: assert(after_run.cache_hits == before.cache_hits + 1)
    end
  end

  test "a start that is not a scalar integer is an error naming the op" do
    nodes = [
      [<<0>>, text("f32"), list([4, 3])],
      [<<0>>, text("f32"), list([])],
      [<<43>>, u32(0), starts([{:node, 1}, 0]), list([2, 2]), list([1, 1])]
    ]

    bytes = IO.iodata_to_binary(["NXVKGRPH", u32(2), u32(3), nodes, u32(1), u32(2)])
    assert {:error, message} = NIF.plan_run(bytes, [])
    assert message =~ "slice"
    assert message =~ "scalar integer"
  end
end
