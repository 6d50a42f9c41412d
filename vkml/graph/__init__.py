"""The lazy graph: nodes, views, and building nodes for ops with every check done eagerly."""
