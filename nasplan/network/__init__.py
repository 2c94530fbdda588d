"""Declared network changes (MTU, point-to-point addresses): snapshot, arm, apply, verify, restore.

``model`` reads a plan's ``links``/``interfaces``/``network``; ``state`` parses ``ip -j``,
``iptext`` BusyBox / old iproute2 ``ip`` text, ``ifconfig`` a host with only ``ifconfig``;
``tools`` picks one per host from its facts and builds the read/change/undo commands;
``scripts`` wraps them in the armed-revert host scripts; ``checks`` parses DF pings,
``ip route get``, link speed; ``restore`` puts one host back and proves it. The phase of a
run that uses all this is ``nasplan.run.network_phase``; ``nasplan restore RUN_DIR`` is
``nasplan.run.restore``.
"""
