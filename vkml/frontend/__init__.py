"""The user-facing layer: functional operators, creation, random, devices, autograd, realize."""
