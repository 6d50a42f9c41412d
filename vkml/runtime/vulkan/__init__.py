"""The Vulkan backend: instance, devices, memory, pipelines, recordings, the kernel cache."""
