"""Loop distribution: which ordered partition of each innermost loop's
dependence graph ``MLBridgeLoopDistribution.so`` should make, learned from
measured callgrind Ir (``python -m mlbridge.train loop-distribution``;
docs/loop-distribution.md, "Training and results").

* :mod:`.partitions` -- valid ordered partitions, their enumeration and the
  agents' moves that build one;
* :mod:`.policy` -- :class:`GraphPolicy`, the gated graph network with the
  select and merge heads, and its ONNX export.
"""

from .partitions import decisions, enumerate_partitions, format_partition, is_valid, parse
from .policy import MAX_NODES, GraphPolicy

__all__ = ["GraphPolicy", "MAX_NODES", "decisions", "enumerate_partitions",
           "format_partition", "is_valid", "parse"]
