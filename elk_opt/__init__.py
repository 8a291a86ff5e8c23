"""elk-opt: a reference optimizer for preload scheduling on inter-core-connected AI chips."""

__version__ = "0.1.0"
