defmodule Nx.Vulkan.DeviceTest do
  use ExUnit.Case, async: true

  test "devices lists at least one usable device with its capabilities" do
    devices = Nx.Vulkan.devices()
    assert [_ | _] = devices

    for device <- devices do
      assert is_integer(device.index)
      assert is_binary(device.name) and is_binary(device.driver)
      assert is_integer(device.subgroup_size)
      assert is_map(device.subgroup_operations)
      assert is_integer(device.cooperative_matrix_shapes)
      assert is_boolean(device.bfloat16_cooperative_matrix)
      assert is_boolean(device.workgroup_cooperative_matrices)
    end

    assert Enum.any?(devices, &is_nil(&1.missing))
  end

  test "device_info describes the default device" do
    info = Nx.Vulkan.device_info()
    assert is_binary(info.name) and info.name != ""
    assert is_binary(info.driver_info)
    assert info.buffer_device_address == true
    assert info.api_version =~ ~r/^1\.\d+\.\d+$/
  end

  test "synchronize" do
    assert Nx.Vulkan.synchronize() == :ok
  end

  test "a selector that matches nothing is an error naming it" do
    assert {:error, message} = Nx.Vulkan.NIF.open_device("no-such-device-xyz")
    assert message =~ "no-such-device-xyz"
  end
end
