"""CUDAPerf: multi-turn GRPO for serial-code -> CUDA translation, rewarded by a sandboxed
compile/test/time harness and a learned ranker over structural kernel features.

The package is the thin shared layer the notebooks call; see README.md for the map.
"""
__version__ = "0.1.0"
