"""The plausible workload: plans drawn from published trace statistics, submitted through pyslurm (the
default) or slurmrestd.

``lab.blueprint.workload_spec`` (the blueprint's ``workload:`` section) → ``fit`` (distributions from
medians, means and shares) → ``plan`` (pure, deterministic jobs) → ``jobscript`` (each job's bash) →
``submitters`` (the runner's way into Slurm: ``pyslurm_client``, whose ``pyslurm_agent`` runs in the
controller from the wheel ``pyslurm_wheel`` builds and ``pyslurm_install`` installs; or ``submit``, the
slurmrestd client, with ``--submit-via slurmrestd``) → ``runner`` (submit on time, cancel as planned,
the DCGM job-classes file) → ``summary`` (read back from slurmdbd). ``stats`` sets a plan beside its
trace figures; ``background`` is the live mode `lab up` starts; the ``lab workload`` command attaches to
the running lab (``lab.kinds.attach``). See docs/workload.md.
"""
