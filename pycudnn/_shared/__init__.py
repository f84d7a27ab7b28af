"""Runtime shared by ``pycudnn`` and ``pycutensor``: ownership, FFI, devices, streams, arrays, dtypes.

Importing this package loads no shared library.
"""
