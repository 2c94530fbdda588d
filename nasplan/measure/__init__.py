"""Measurements: the kind contract (kind.py), one module per plan kind (kinds/), the tools.

``kinds/`` turns plan tests into run.json records; ``tools/`` holds, per external tool, its
argv, a pure parser of its output and one I/O call; ``netpath.py`` the network path of a test;
``sampler.py`` resource sampling while a test runs.
"""
