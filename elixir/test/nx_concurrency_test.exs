# Runs only with Nx present (NX_PATH, see docs/ELIXIR.md): CI has no Nx.
if Code.ensure_loaded?(Nx) do
  defmodule Nx.Vulkan.NxConcurrencyTest do
    # Compares VM-wide live bytes before and after: runs alone, after the async tests.
    use ExUnit.Case, async: false
    @moduletag timeout: 600_000

    @processes 32
    # NXVK_SOAK_SECONDS lengthens the run (the issue's sustained run used 20).
    @seconds String.to_integer(System.get_env("NXVK_SOAK_SECONDS", "3"))

    defp live_bytes do
      :ok = Nx.Vulkan.synchronize()
      :ok = Nx.Vulkan.NIF.trim_pool()
      Nx.Vulkan.counters().device_bytes_live
    end

    # One round: eager ops and a compiled function on random data, each result compared with
    # Nx.BinaryBackend's on the same inputs.
    defp round(compiled, seed) do
      :rand.seed(:exsss, {seed, 1, 2})
      size = 1 + rem(seed, 97)
      floats = for _ <- 1..(size * 3), do: :rand.uniform() * 6.0 - 3.0
      integers = for _ <- 1..size, do: :rand.uniform(101) - 51
      x = floats |> Nx.tensor(backend: Nx.BinaryBackend) |> Nx.reshape({size, 3})
      y = Nx.tensor(integers, backend: Nx.BinaryBackend)
      device_x = Nx.backend_transfer(x, Nx.Vulkan.Backend)
      device_y = Nx.backend_transfer(y, Nx.Vulkan.Backend)

      checks = [
        {Nx.sum(device_x, axes: [0]), Nx.sum(x, axes: [0])},
        {Nx.multiply(device_y, device_y), Nx.multiply(y, y)},
        {Nx.reverse(Nx.argmax(device_x, axis: 1)), Nx.reverse(Nx.argmax(x, axis: 1))},
        {compiled.(device_x), Nx.multiply(Nx.tanh(x), 2.0) |> Nx.reduce_max(axes: [1])}
      ]

      Enum.all?(checks, fn {result, expected} ->
        Nx.all_close(Nx.backend_copy(result, Nx.BinaryBackend), expected, atol: 1.0e-5)
        |> Nx.to_number() == 1
      end)
    end

    defp work(process, compiled, deadline, rounds \\ 0) do
      if System.monotonic_time(:millisecond) >= deadline do
        {:ok, rounds}
      else
        if round(compiled, process * 100_003 + rounds),
          do: work(process, compiled, deadline, rounds + 1),
          else: {:wrong, process, rounds}
      end
    end

    test "#{@processes} processes run eager ops and a compiled function, every result checked" do
      Nx.default_backend(Nx.Vulkan.Backend)

      compiled =
        Nx.Defn.jit(&(Nx.multiply(Nx.tanh(&1), 2.0) |> Nx.reduce_max(axes: [1])),
          compiler: Nx.Vulkan.Compiler
        )

      baseline = live_bytes()
      deadline = System.monotonic_time(:millisecond) + @seconds * 1_000

      outcomes =
        1..@processes
        |> Enum.map(fn process -> Task.async(fn -> work(process, compiled, deadline) end) end)
        |> Task.await_many(:infinity)

      assert Enum.all?(outcomes, &match?({:ok, rounds} when rounds > 0, &1)), inspect(outcomes)

      # The tasks' heaps are gone; the bytes they held go back once the GC has run.
      :erlang.garbage_collect()
      Process.sleep(100)
      assert live_bytes() <= baseline + 64 * 1024
    end
  end
end
