"""Prometheus' own React web UI at the tag of the lab's Prometheus, which Debian's package lacks."""
