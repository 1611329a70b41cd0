"""prmg: prove that aclnnInplacePartialRotaryMulGrad is right, on an NPU or on the host emulator."""

__version__ = "0.1.0"
