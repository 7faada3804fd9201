defmodule Nx.Vulkan.RoundTripTest do
  use ExUnit.Case, async: true
  import NxVulkan.TestHelpers
  alias Nx.Vulkan.NIF

  # {dtype, shape, binary}: each binary is uploaded and must come back unchanged.
  @cases [
    {"f32", {2, 3}, [1.5, -2.0, 0.0, 3.25, 1.0e10, -0.5]},
    {"f32", {}, [42.0]},
    {"f64", {3}, [1.0e-300, -2.5, 3.141592653589793]},
    {"s64", {2, 2}, [-9_223_372_036_854_775_808, -1, 0, 9_223_372_036_854_775_807]},
    {"u8", {5}, [0, 1, 127, 128, 255]},
    {"bf16", {4}, [1.0, -2.0, 0.5, 256.0]},
    {"u4", {3}, [1, 15, 7]},
    {"u4", {2, 2}, [0, 9, 10, 15]},
    {"c64", {2}, [{1.0, 2.0}, {-3.5, 0.25}]}
  ]

  for {dtype, shape, values} <- @cases do
    test "#{dtype} #{inspect(shape)} comes back unchanged" do
      dtype = unquote(dtype)
      shape = unquote(Macro.escape(shape))
      binary = encode(unquote(Macro.escape(values)), dtype)
      {:ok, tensor} = NIF.from_binary(binary, dtype, shape)
      assert NIF.to_binary(tensor) == {:ok, binary}
      assert NIF.shape(tensor) == {:ok, shape}
      assert NIF.dtype(tensor) == {:ok, dtype}
    end
  end

  test "u4 packs element 0 into the high bits of byte 0" do
    {:ok, tensor} = NIF.from_binary(<<0x1F, 0x70>>, "u4", {3})
    assert NIF.to_binary(tensor) == {:ok, <<0x1F, 0x70>>}
    {:ok, as_u8} = NIF.as_type(tensor, "u8")
    assert values!(as_u8) == [1, 15, 7]
  end

  test "empty tensors of any rank" do
    for shape <- [{0}, {2, 0}, {0, 3, 1}] do
      {:ok, tensor} = NIF.from_binary(<<>>, "f32", shape)
      assert NIF.to_binary(tensor) == {:ok, <<>>}
      assert NIF.shape(tensor) == {:ok, shape}
    end
  end

  test "shapes may be given as lists" do
    {:ok, tensor} = NIF.from_binary(encode([1, 2], "s32"), "s32", [2, 1])
    assert NIF.shape(tensor) == {:ok, {2, 1}}
  end

  test "as_type converts with Nx's rules" do
    tensor = tensor!([1.75, -2.5, 300.0], "f32", {3})
    assert values!(ok!(NIF.as_type(tensor, "s32"))) == [1, -2, 300]
    assert values!(ok!(NIF.as_type(tensor, "f64"))) == [1.75, -2.5, 300.0]
  end
end
