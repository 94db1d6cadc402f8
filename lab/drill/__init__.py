"""Fault drills: `lab drill NAME` breaks one part of a running Slurm lab with the real mechanism (a
SIGKILL, a stopped daemon, a killed container, an XID, a bad mapping directory, a burst of jobs),
checks what a production cluster would do, restores it and reports the time to recover.

:mod:`lab.drill.probe` is the lab as a drill sees it, :mod:`lab.drill.checks` the pure checks every
drill shares ("nothing lost": accounting and scrape gaps), :mod:`lab.drill.services` and
:mod:`lab.drill.nodes` and :mod:`lab.drill.mapping` the drills, :mod:`lab.drill.suite` the run and its report.
"""
