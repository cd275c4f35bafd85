"""Python helpers shared by the cluster CLI, the benchmarks and the tests.

Standard library only: they run on a fresh Debian 12 before anything else is
installed.
"""
