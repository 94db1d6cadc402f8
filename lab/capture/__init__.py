"""Captures: scrape every target with provenance, inventory the series, diff against signals/."""
