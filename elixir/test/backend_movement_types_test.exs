# Runs only with Nx present (NX_PATH, see docs/ELIXIR.md): CI has no Nx.
if Code.ensure_loaded?(Nx) do
  defmodule Nx.Vulkan.BackendMovementTypesTest do
    # Reads VM-wide counters and sets strict mode: runs alone, after the async tests.
    use ExUnit.Case, async: false

    setup do
      Nx.default_backend(Nx.Vulkan.Backend)
      :ok
    end

    defp host(tensor), do: Nx.backend_copy(tensor, Nx.BinaryBackend)

    # The same call on Nx.BinaryBackend operands.
    defp on_host(fun, args), do: apply(fun, Enum.map(args, &host_arg/1))
    defp host_arg(%Nx.Tensor{} = tensor), do: host(tensor)
    defp host_arg(list) when is_list(list), do: Enum.map(list, &host_arg/1)
    defp host_arg(other), do: other

    defp assert_same(result, expected) do
      assert {result.type, result.shape} == {expected.type, expected.shape}
      assert Nx.to_binary(result) == Nx.to_binary(expected)
    end

    test "mixed operand types and tensor starts run on the device, as Nx.BinaryBackend" do
      integers = Nx.tensor([[1, -2, 300], [4, 5, -6]], type: :s32)
      halves = Nx.tensor([[2.5, -0.5, 7.25]], type: :f16)
      bytes = Nx.tensor([[7, 8, 9]], type: :u8)
      start = Nx.tensor(1, type: :s64)
      far = Nx.tensor(9, type: :u8)

      cases = [
        {&Nx.concatenate/1, [[integers, halves, bytes]]},
        {&Nx.concatenate/2, [[bytes, integers], [axis: 0]]},
        {&Nx.concatenate/1, [[Nx.tensor([1, 2, 3], type: :u4), Nx.tensor([15], type: :u4)]]},
        {&Nx.concatenate/1, [[Nx.tensor([1.5, -448.0], type: :f8_e4m3fn), Nx.tensor([2.0])]]},
        {&Nx.reverse/1, [Nx.tensor([[1, -2, 3], [0, -1, 1]], type: :s2)]},
        {&Nx.put_slice/3, [integers, [start, far], halves]},
        {&Nx.put_slice/3, [integers, [0, 1], Nx.tensor([[3.0]], type: :f64)]},
        {&Nx.slice/3, [integers, [start, far], [1, 2]]},
        {&Nx.slice/4, [integers, [far, start], [2, 1], [strides: [2, 1]]]}
      ]

      Nx.Vulkan.with_strict(:raise, fn ->
        {_, taken} =
          Nx.Vulkan.with_fallback_count(fn ->
            for {fun, args} <- cases do
              assert_same(host(apply(fun, args)), on_host(fun, args))
            end
          end)

        # Nx.BinaryBackend pads in the input's type whatever `out` says (Nx's output type is
        # the merged one, f32 here): the oracle pads the converted input.
        config = [{1, 0, 1}, {0, 2, 0}]
        padded = Nx.pad(integers, Nx.tensor(1.5, type: :f32), config)
        assert_same(host(padded), Nx.pad(host(Nx.as_type(integers, :f32)), 1.5, config))

        assert taken == 0
      end)
    end

    # Null arm: the comparison tells a wrong clamp apart.
    test "a wrongly clamped slice is rejected" do
      integers = Nx.tensor([[1, 2, 3], [4, 5, 6]])
      result = Nx.slice(integers, [Nx.tensor(0), Nx.tensor(9)], [2, 2])
      refute Nx.to_binary(result) == Nx.to_binary(Nx.tensor([[1, 2], [4, 5]]))
      assert Nx.to_flat_list(result) == [2, 3, 5, 6]
    end
  end
end
