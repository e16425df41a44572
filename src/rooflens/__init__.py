"""rooflens: predict how a transformer LLM runs on a GPU, then prove it on real kernels."""

__version__ = "0.1.0"
