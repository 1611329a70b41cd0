"""Stage 5, device: cases in, ``results.CaseResult`` records out: each case's inputs launched on a device, judged
in the worker that ran it.

``toolkit`` finds the libraries (a CANN toolkit, or the host emulator built from ``runners/emulator``) and ``linkage``
reads back what a worker really mapped and bound to (preloaded libraries, another toolkit's files), both asking
``elf`` what a library defines and binds by name (read from its file, not loaded); ``acl`` is
the ctypes binding of aclnn and ``geir`` of graph mode; ``runners/`` the runners ``--runner`` picks (one module and
one ``RUNNERS`` entry each), ``differential`` holds two call paths against each other; ``execute`` runs cases in
worker processes (crash isolation, timeouts, devices, shards) and ``cluster`` on Ray actors; ``provenance`` says
where and when a run happened; ``artifacts`` is the one layout of a case's arrays on disk.
"""
