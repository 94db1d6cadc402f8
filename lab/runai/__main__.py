"""`python3 -m lab.runai serve …`: the Run:ai construct without the rest of the `lab` CLI (its container)."""

from lab.runai.cli import app

app(prog_name="lab runai")
