"""Pure-Python twins of the native kernels, one module per kernel module
with the same stem (``twin.records`` <-> native/records.pyx): the test
oracle and the baseline of the micro-benchmarks. Same names, arguments,
results and exceptions as the compiled modules; slow by design, never used
on a hot path.
"""
