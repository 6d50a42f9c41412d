"""Lowering fused groups of graph nodes to kernel IR: elementwise, reductions, matmul, tuning."""
