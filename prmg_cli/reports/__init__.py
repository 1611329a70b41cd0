"""Stage 6, reports: ``results.CaseResult`` records in; the results file, reports, merges and comparisons out.

``store`` is the one writer and reader of results files (``--results``, ``--resume``), ``consistency`` whether a
record agrees with itself, ``run_record`` what a run records of itself (its description, the settings its
verdicts are judged under, what ``--resume`` takes); ``outputs/`` holds one module per ``--report`` format
(``OUTPUTS``) and the screen's layout; ``merge`` is ``prmg report`` (one report from several results files;
``chips`` the chips its records ran on), ``compare`` is ``prmg compare`` (what changed between two runs),
``progress`` the progress line of a run.
"""
