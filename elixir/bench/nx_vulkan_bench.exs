# Elixir-side benchmark workloads of nx_vulkan: what a user of Nx.Vulkan.Backend sees, NIF and
# BEAM overheads included. Prints one JSON line per workload in the format of
# ../shared/peers/README.md, named `NAME@elixir` after the peer workload NAME it mirrors.
#
#   NX_PATH=... mix run bench/nx_vulkan_bench.exs [--only a,b] [--quick]
#
# --quick shrinks the large workloads (for lavapipe) and renames them by size. Wall-clock
# medians, like the peer's `wall_time`: a workload that ends on the device synchronises.

defmodule NxVulkanBench do
  import Bitwise

  def run(argv) do
    {options, _, _} = OptionParser.parse(argv, strict: [only: :string, quick: :boolean])
    quick = Keyword.get(options, :quick, false)
    only = options |> Keyword.get(:only, "") |> String.split(",", trim: true)
    Nx.default_backend(Nx.Vulkan.Backend)
    IO.puts(:stderr, json(%{device: Nx.Vulkan.device_info().summary}))

    for {name, {workload, unit, better}} <- workloads(quick), only == [] or name in only do
      record =
        try do
          %{name: name, value: Float.round(workload.() * 1.0, 4), unit: unit, better: better}
        rescue
          error -> %{name: name, error: error |> Exception.message() |> String.slice(0, 300)}
        end

      IO.puts(json(Map.put(record, :impl, "nx_vulkan")))
    end
  end

  # A flat map of strings and numbers as a JSON object (Elixir 1.17 has no JSON module).
  defp json(map) do
    fields =
      for {key, value} <- map do
        encoded =
          if is_binary(value),
            do: inspect(value, printable_limit: :infinity),
            else: to_string(value)

        ~s("#{key}": #{encoded})
      end

    "{" <> Enum.join(fields, ", ") <> "}"
  end

  defp workloads(quick) do
    large = if quick, do: 1 <<< 20, else: 1 <<< 28
    suffix = if quick, do: "1M", else: "256M"
    gemm = if quick, do: 512, else: 8192
    {sort_size, sort_suffix} = if quick, do: {1 <<< 16, "64K"}, else: {1 <<< 24, "16M"}
    fft_rows = if quick, do: 8, else: 1024
    {batch, order} = if quick, do: {8, 32}, else: {256, 256}

    [
      {"small_roundtrip_us@elixir", {&small_roundtrip/0, "us", "lower"}},
      {"small_op_chain_us@elixir", {&small_op_chain/0, "us/op", "lower"}},
      {"add_f32_#{suffix}@elixir", {fn -> add(large) end, "GB/s", "higher"}},
      {"sum_f32_#{suffix}@elixir", {fn -> sum(large) end, "GB/s", "higher"}},
      {"softmax_f32_#{suffix}@elixir_jit", {fn -> softmax(large) end, "ms", "lower"}},
      {"chain_f32_#{suffix}@elixir_jit", {fn -> chain(large) end, "ms", "lower"}},
      {"sgemm_#{gemm}@elixir", {fn -> sgemm(gemm) end, "TFLOP/s", "higher"}},
      {"sort_f32_#{sort_suffix}@elixir", {fn -> sort(sort_size) end, "ms", "lower"}},
      {"fft_c64_#{fft_rows}x16K@elixir", {fn -> fft(fft_rows) end, "ms", "lower"}},
      {"maxpool2x2_f32_#{suffix}@elixir", {fn -> maxpool(large) end, "GB/s", "higher"}},
      {"trsm_f32_#{batch}x#{order}@elixir",
       {fn -> triangular_solve(batch, order) end, "ms", "lower"}}
    ]
  end

  defp random(size) do
    Nx.iota({size}, type: :f32) |> Nx.multiply(1.0e-6) |> Nx.sin()
  end

  # Median seconds of `fun`, which must synchronise itself.
  defp wall_time(fun, warm, reps) do
    for _ <- 1..warm, do: fun.()

    times =
      for _ <- 1..reps do
        {microseconds, _} = :timer.tc(fun)
        microseconds / 1.0e6
      end

    times |> Enum.sort() |> Enum.at(div(reps, 2))
  end

  defp small_roundtrip do
    x = random(1024)
    wall_time(fn -> x |> Nx.sigmoid() |> Nx.to_binary() end, 20, 200) * 1.0e6
  end

  defp small_op_chain do
    x = random(1024)

    chain = fn ->
      Enum.reduce(1..1000, x, fn _, y -> Nx.sigmoid(y) end)
      Nx.Vulkan.synchronize()
    end

    wall_time(chain, 1, 5) / 1000 * 1.0e6
  end

  defp add(size) do
    {a, b} = {random(size), random(size)}
    seconds = wall_time(fn -> Nx.add(a, b) && Nx.Vulkan.synchronize() end, 3, 20)
    3 * 4 * size / seconds / 1.0e9
  end

  defp sum(size) do
    a = random(size)
    seconds = wall_time(fn -> Nx.sum(a) && Nx.Vulkan.synchronize() end, 3, 20)
    4 * size / seconds / 1.0e9
  end

  defp softmax(size) do
    a = random(size)

    softmax =
      Nx.Defn.jit(&Nx.divide(Nx.exp(&1), Nx.sum(Nx.exp(&1))), compiler: Nx.Vulkan.Compiler)

    wall_time(fn -> softmax.(a) && Nx.Vulkan.synchronize() end, 3, 20) * 1.0e3
  end

  # sigmoid(x * a + 1.5) as one defn: a fused nxvk-fusion plan.
  defp chain(size) do
    x = random(size)

    chain =
      Nx.Defn.jit(&Nx.sigmoid(Nx.add(Nx.multiply(&1, 0.75), 1.5)), compiler: Nx.Vulkan.Compiler)

    wall_time(fn -> chain.(x) && Nx.Vulkan.synchronize() end, 3, 20) * 1.0e3
  end

  defp sgemm(n) do
    a = random(n * n) |> Nx.reshape({n, n})
    b = Nx.cos(a)
    seconds = wall_time(fn -> Nx.dot(a, b) && Nx.Vulkan.synchronize() end, 2, 10)
    2 * n * n * n / seconds / 1.0e12
  end

  defp sort(size) do
    # A scrambled sequence: sin of a large multiple is far from sorted.
    a = Nx.iota({size}, type: :f32) |> Nx.multiply(12.9898) |> Nx.sin()
    wall_time(fn -> Nx.sort(a) && Nx.Vulkan.synchronize() end, 2, 10) * 1.0e3
  end

  defp fft(rows) do
    # c64 input made on the device by a first transform (as_type to complex is a host path).
    a = random(rows * 16_384) |> Nx.reshape({rows, 16_384}) |> Nx.fft()
    wall_time(fn -> Nx.fft(a) && Nx.Vulkan.synchronize() end, 2, 10) * 1.0e3
  end

  # window_max over 2x2 windows with stride 2 of a [size / 4096, 4096] matrix: the input read
  # once and a quarter of it written.
  defp maxpool(size) do
    a = random(size) |> Nx.reshape({div(size, 4096), 4096})

    seconds =
      wall_time(
        fn -> Nx.window_max(a, {2, 2}, strides: [2, 2]) && Nx.Vulkan.synchronize() end,
        3,
        20
      )

    1.25 * 4 * size / seconds / 1.0e9
  end

  # A batch of lower-triangular solves with as many right-hand sides as the order; includes
  # the singularity check Nx's contract needs (one boolean read back).
  defp triangular_solve(batch, n) do
    a = random(batch * n * n) |> Nx.reshape({batch, n, n}) |> Nx.add(Nx.multiply(Nx.eye(n), 4.0))
    b = random(batch * n * n) |> Nx.reshape({batch, n, n}) |> Nx.cos()

    wall_time(fn -> Nx.LinAlg.triangular_solve(a, b) && Nx.Vulkan.synchronize() end, 2, 10) *
      1.0e3
  end
end

NxVulkanBench.run(System.argv())
