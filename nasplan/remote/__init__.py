"""Talking to hosts: the one ``Runner`` contract, its SSH and local runners, shell quoting,
sudo and the step timeouts. Nothing here knows a plan, a kind or a platform."""
