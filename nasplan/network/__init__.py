"""Declared network changes (MTU, point-to-point addresses): snapshot, arm, apply, verify, restore.

``model`` reads a plan's ``links``/``interfaces``/``network``; ``state`` parses ``ip -j``;
``scripts`` builds every host command; ``checks`` parses DF pings, ``ip route get``, link speed;
``phase`` runs it all over the sessions of an apply; ``restore`` is ``nasplan restore RUN_DIR``.
"""
