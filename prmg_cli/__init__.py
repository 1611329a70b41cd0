"""prmg: prove that aclnnInplacePartialRotaryMulGrad is right, on an NPU or on the host emulator.

One package per stage of a case's way, each importing only those below it: ``ops`` (1), ``inputs`` (2), ``judging``
(3), ``cases`` (4), ``device`` (5), ``reports`` (6), ``commands`` (7); here only the ground every stage speaks in and
the entry points (``cli``, ``pytest_plugin``). Each package's ``__init__`` says what its stage takes and gives, and
docs/developing.md draws the map.
"""

__version__ = "0.1.0"
