"""The plausible workload: plans drawn from published trace statistics, submitted through slurmrestd.

``model`` (the blueprint's ``workload:`` section) → ``fit`` (distributions from medians, means and
shares) → ``plan`` (pure, deterministic jobs) → ``jobscript`` (each job's bash) → ``submit`` (the
slurmrestd client, and why not pyslurm) → ``runner`` (submit on time, cancel as planned, the DCGM
job-classes file) → ``summary`` (read back from slurmdbd). ``stats`` sets a plan beside its trace
figures; ``live`` connects to a running lab and starts the background mode; ``cli`` is
``lab workload``. See docs/workload.md.
"""
