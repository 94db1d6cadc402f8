"""The plausible workload: plans drawn from published trace statistics, submitted through slurmrestd.

``lab.blueprint.workload_spec`` (the blueprint's ``workload:`` section) → ``fit`` (distributions from
medians, means and shares) → ``plan`` (pure, deterministic jobs) → ``jobscript`` (each job's bash) →
``submit`` (the slurmrestd client, and why not pyslurm) → ``runner`` (submit on time, cancel as
planned, the DCGM job-classes file) → ``summary`` (read back from slurmdbd). ``stats`` sets a plan
beside its trace figures; ``background`` is the live mode `lab up` starts; ``cli`` is
``lab workload``, which attaches to the running lab (``lab.kinds.attach``). See docs/workload.md.
"""
