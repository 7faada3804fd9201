defmodule Nx.Vulkan.Ops do
  @moduledoc """
  The ops the NIF runs natively, by their Nx names.

  These lists mirror nxvk-kernels' tables; `Nx.Vulkan.NIF.op_names/0` returns the tables' own
  lists, and `test/ops_test.exs` checks the two agree. `Nx.Vulkan.Backend` generates one
  callback per name from them, so wiring a new catalog op into Elixir is one word here.
  """

  @binary ~w(add subtract multiply divide pow remainder atan2 min max quotient
             bitwise_and bitwise_or bitwise_xor left_shift right_shift
             equal not_equal greater less greater_equal less_equal
             logical_and logical_or logical_xor)a

  @unary ~w(negate abs sign floor ceil round exp expm1 log log1p sqrt rsqrt sigmoid tanh
            sin cos tan asin acos atan sinh cosh asinh acosh atanh erf erfc erf_inv cbrt
            bitwise_not logical_not is_nan is_infinity population_count count_leading_zeros
            real imag conjugate)a

  # Reductions over `:axes` (with `:keep_axes`), and the arg-reductions over one `:axis`.
  @reduce ~w(sum product reduce_max reduce_min all any argmax argmin)a

  # Cumulative ops along one axis (Nx routes them through `block/4`).
  @cumulative ~w(cumulative_sum cumulative_product cumulative_min cumulative_max)a

  @doc "Binary element-wise ops (two tensors in, one out)."
  def binary, do: @binary

  @doc "Unary element-wise ops."
  def unary, do: @unary

  @doc "Reductions (`Nx.Vulkan.NIF.reduce/5`)."
  def reduce, do: @reduce

  @doc "Cumulative ops (`Nx.Vulkan.NIF.cumulative/4`)."
  def cumulative, do: @cumulative
end
