"""Bring-up: host prerequisites, images, container specs and containers, render, provision (and its
inputs digest), keys, SSH access to machine-like hosts, the daemons of each role, lock, lifecycle."""
