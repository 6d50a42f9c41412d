"""vkml's operators, each written once in the kernel IR."""
