defmodule NxVulkan.TestHelpers do
  @moduledoc false
  # Encoding host values in Nx's binary layout (little-endian; sub-byte integers packed with
  # element 0 in the most significant bits), so tests can build oracles without Nx.

  alias Nx.Vulkan.NIF

  def encode(values, "f32"), do: for(v <- values, into: <<>>, do: <<v::float-32-little>>)
  def encode(values, "f64"), do: for(v <- values, into: <<>>, do: <<v::float-64-little>>)
  def encode(values, "s32"), do: for(v <- values, into: <<>>, do: <<v::signed-32-little>>)
  def encode(values, "s64"), do: for(v <- values, into: <<>>, do: <<v::signed-64-little>>)
  def encode(values, "u8"), do: for(v <- values, into: <<>>, do: <<v::unsigned-8>>)

  # bf16 is the top half of an f32 (the test values are exact in bf16).
  def encode(values, "bf16") do
    for v <- values, into: <<>> do
      <<bits::unsigned-32>> = <<v::float-32>>
      <<Bitwise.bsr(bits, 16)::unsigned-16-little>>
    end
  end

  def encode(values, "u4") do
    packed = for v <- values, into: <<>>, do: <<v::unsigned-4>>
    pad_to_bytes(packed)
  end

  def encode(values, "c64") do
    for {re, im} <- values, into: <<>>, do: <<re::float-32-little, im::float-32-little>>
  end

  def decode(binary, "f32"), do: for(<<v::float-32-little <- binary>>, do: v)
  def decode(binary, "f64"), do: for(<<v::float-64-little <- binary>>, do: v)
  def decode(binary, "s32"), do: for(<<v::signed-32-little <- binary>>, do: v)
  def decode(binary, "s64"), do: for(<<v::signed-64-little <- binary>>, do: v)
  def decode(binary, "u8"), do: for(<<v::unsigned-8 <- binary>>, do: v)

  def decode(binary, "c64") do
    for <<re::float-32-little, im::float-32-little <- binary>>, do: {re, im}
  end

  defp pad_to_bytes(bits) do
    case rem(bit_size(bits), 8) do
      0 -> bits
      r -> <<bits::bitstring, 0::size(8 - r)>>
    end
  end

  def tensor!(values, dtype, shape) do
    {:ok, tensor} = NIF.from_binary(encode(values, dtype), dtype, shape)
    tensor
  end

  def values!(tensor) do
    {:ok, dtype} = NIF.dtype(tensor)
    {:ok, binary} = NIF.to_binary(tensor)
    decode(binary, dtype)
  end

  def ok!({:ok, value}), do: value
end

ExUnit.start()
