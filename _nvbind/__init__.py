"""The runtime shared by ``pycudnn`` and ``pycutensor`` (private: no name here is public API).

Ownership (``resource``), the FFI and raw layers (``ffi``, ``rawlayer``), devices and streams
(``cuda``, ``memory``), arrays, DLPack and ``DeviceArray``, data types, reporting, the command-line
frame, library loading and the smoke-check runner. It imports neither package, and importing it
loads no shared library.
"""
