import Config

# Nx.Vulkan.Backend's inspect leaves out its backend line in tests, as EXLA and Torchx do, so
# Nx's doctests match.
config :nx_vulkan, inspect_backend: config_env() != :test
