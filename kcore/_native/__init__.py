"""Compiled kernels built from native/*.pyx (see setup.py).

Each module takes buffers, ints and file descriptors and returns ints, tuples
or memoryviews; none of them imports kcore.
"""
