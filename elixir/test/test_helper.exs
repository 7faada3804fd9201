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
  def encode(values, "u64"), do: for(v <- values, into: <<>>, do: <<v::unsigned-64-little>>)

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
  def decode(binary, "u64"), do: for(<<v::unsigned-64-little <- binary>>, do: v)

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

  # --- Row-major index arithmetic for host references ---

  @doc false
  def all_coordinates(shape) do
    shape
    |> Tuple.to_list()
    |> Enum.reduce([[]], fn size, prefixes ->
      for prefix <- prefixes, index <- 0..(size - 1)//1, do: prefix ++ [index]
    end)
  end

  def flat_index(coordinates, shape) do
    coordinates
    |> Enum.zip(Tuple.to_list(shape))
    |> Enum.reduce(0, fn {coordinate, size}, flat -> flat * size + coordinate end)
  end

  @doc false
  # The reference of a data-movement op: `source_of.(output_coordinates)` names the input
  # coordinates an output element copies, or `:fill` for padding.
  def moved(values, input_shape, output_shape, fill, source_of) do
    input = List.to_tuple(values)

    for coordinates <- all_coordinates(output_shape) do
      case source_of.(coordinates) do
        :fill -> fill
        source -> elem(input, flat_index(source, input_shape))
      end
    end
  end

  def random_integers(count, range \\ 1_000),
    do: for(_ <- 1..count//1, do: :rand.uniform(2 * range + 1) - range - 1)

  def random_shape(rank, max_size \\ 4),
    do: List.to_tuple(for(_ <- 1..rank//1, do: :rand.uniform(max_size)))

  def size(shape), do: shape |> Tuple.to_list() |> Enum.product()
end

ExUnit.start()

# NXVK_PRINT_FALLBACKS=1 prints the run's host-fallback counts by (op, dtype) at the end, for
# docs/ELIXIR_RESULTS.md (ExUnit.after_suite/1 exists from Elixir 1.15).
if System.get_env("NXVK_PRINT_FALLBACKS") && function_exported?(ExUnit, :after_suite, 1) do
  ExUnit.after_suite(fn _results ->
    counters = Nx.Vulkan.counters()
    IO.puts("\nhost fallbacks: #{counters.host_fallbacks_total}")

    for %{op: op, dtype: dtype, count: count} <-
          Enum.sort_by(counters.host_fallbacks, &(-&1.count)),
        do: IO.puts("  #{op} #{dtype} #{count}")
  end)
end
