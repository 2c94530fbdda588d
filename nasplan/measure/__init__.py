"""Measurements: the kind contract (kind.py), one folder per plan kind (kinds/), the tools.

``kinds/NAME/`` turns plan tests of one kind into run.json records, and holds everything only
that kind knows: its runs, its own tools, its section of report.md and its own causes for the
Diagnosis. What several kinds share stands here: ``tools/`` holds, per external tool, its argv,
a pure parser of its output and at most one I/O call; ``netpath.py`` the network path of a
test; ``sampler.py`` the resource sampler's script and parser, ``sampling.py`` a test's
samplers started and stopped beside its work.
"""
