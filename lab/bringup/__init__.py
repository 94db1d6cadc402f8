"""Bring-up: images, engine, containers, render, provision, keys, lock, lifecycle, faults."""
