"""The graph-mode shim (prmg_geir.cpp) and its C ABI (prmg_geir.h), shipped as package data."""
