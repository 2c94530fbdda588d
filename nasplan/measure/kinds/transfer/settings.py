"""`kind: transfer`'s settings: ``TransferSettings``, defined in ``nasplan/measure/methods/base.py``
beside ``Transfer`` because every method reads them too (``TransferMethod.concrete``) and the
methods may not import this folder (it imports them: a cycle); here so that every kind's settings
are its folder's ``settings.py``."""

from __future__ import annotations

from nasplan.measure.methods.base import TransferSettings as TransferSettings
