"""The `lab` command's groups, one module each; :mod:`lab.cli` mounts them. Thin: each command parses
its flags, calls one function of the layers below and prints.

:mod:`options` holds what they share (the --blueprint and --lab options, the errors a command reports
as one line); :mod:`lab_lifecycle` is up, down, validate, inventory and doctor; :mod:`access` status,
sh and token; :mod:`web_ui` Prometheus' web UI into a running lab; :mod:`fault` the GPU faults;
:mod:`capture` capture and dump; :mod:`workload`, :mod:`churn`, :mod:`drill` and :mod:`alerts` their
commands.
"""
