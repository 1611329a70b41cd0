"""Stage 4, cases: case files in, ``case.Case`` values out, and back: everything that reads, makes or measures
case files.

``loader`` reads a case file (``yamlfile``: bounded, safe YAML; ``fields``: one parser per key) into cases;
``gencase`` makes cases from options, ``presets`` (with ``cover_preset`` and ``models_preset``) every shipped file
under ``cases/``, ``ttk`` imports upstream's TTK lists; ``coverage`` says which regime classes a suite covers and
``vacuity`` whether a case can fail. Above ``judging/``: a case file names its standard, checks and known defects,
which are checked against their registries when it is read.
"""
