"""aifactory-lab: a real Slurm cluster in containers for AI-factory observability work."""

__version__ = "0.1.0"
