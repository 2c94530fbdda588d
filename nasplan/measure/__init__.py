"""Measurements: the kind contract (kind.py), one module per plan kind (kinds/), the tools.

``kinds/`` turns plan tests into run.json records; ``tools/`` holds, per external tool, its
argv, a pure parser of its output and at most one I/O call; ``iperf3_repetition.py`` one iperf3
repetition on two hosts (its server's start and stop, the client, what runs around it);
``netpath.py`` the network path of a test; ``sampler.py`` the resource sampler's script and
parser, ``sampling.py`` a test's samplers started and stopped beside its work.
"""
