"""Slurm's own metric families (slurmctld's metrics/openmetrics plugin), read from a tag's source."""
