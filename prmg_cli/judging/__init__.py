"""Stage 3, judging: a case, its inputs and what the device returned in; a verdict (status, metrics, message) out.

``judge`` judges one launch (status, the in-place contract, the slice by its precision standard); ``default_pass``
is the ``default`` standard's one pass over a large result (compiled or numpy blocks); ``nonfinite`` the NaN/Inf a
correct kernel may give; ``diagnosis`` where the errors are; ``defects`` what a wrong-result known defect bounds;
``verdict_metrics`` a verdict's key metric and drift metrics; ``judge_fingerprint`` what identifies the judge (each
standard's limits, the judging code's fingerprint); ``standards/`` the precision standards and ``checks/``
the golden-free checks, one module and one registry entry each. It stands on the operators (``ops/``: the golden)
and the inputs; the case loader stands on it (a case file names its standard and checks).
"""
