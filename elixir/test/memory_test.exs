defmodule Nx.Vulkan.MemoryTest do
  # Reads VM-wide counters: runs alone, after the async tests.
  use ExUnit.Case, async: false
  # Lavapipe on a loaded 2-core machine is slow; ExUnit's default 60 s is too tight.
  @moduletag timeout: 300_000
  import NxVulkan.TestHelpers
  alias Nx.Vulkan.NIF

  defp live_bytes do
    :ok = Nx.Vulkan.synchronize()
    :ok = NIF.trim_pool()
    Nx.Vulkan.counters().device_bytes_live
  end

  # Freed buffers may wait for the batch that used them; give that a moment before judging.
  defp settled_live_bytes(limit, attempts \\ 50) do
    live = live_bytes()

    if live <= limit or attempts == 0 do
      live
    else
      Process.sleep(10)
      settled_live_bytes(limit, attempts - 1)
    end
  end

  test "the BEAM's garbage collector frees tensors" do
    baseline = live_bytes()
    binary = encode(Enum.to_list(1..64), "s32")
    parent = self()

    # The tensors live in another process; when it exits, its heap (and with it the last
    # reference to each resource) goes away.
    {pid, ref} =
      spawn_monitor(fn ->
        tensors = for _ <- 1..2_000, do: ok!(NIF.from_binary(binary, "s32", {64}))
        send(parent, {:live, live_bytes(), length(tensors)})
        :erlang.garbage_collect()
        receive do: (:stop -> :ok)
      end)

    # Generous: on a loaded 2-core CI machine lavapipe uploads take milliseconds each.
    assert_receive {:live, while_alive, 2_000}, 120_000
    assert while_alive >= baseline + 2_000 * 256
    send(pid, :stop)
    assert_receive {:DOWN, ^ref, :process, ^pid, :normal}, 5_000

    limit = baseline + 64 * 1024
    after_free = settled_live_bytes(limit)
    assert after_free <= limit, "live bytes #{after_free}, baseline #{baseline}"

    # And in the test process itself: drop the references, collect, and the bytes go back.
    tensors = for _ <- 1..1_000, do: ok!(NIF.from_binary(binary, "s32", {64}))
    assert length(tensors) == 1_000
    tensors = nil
    _ = tensors
    :erlang.garbage_collect()
    assert settled_live_bytes(limit) <= limit
  end
end
