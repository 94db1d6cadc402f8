"""Attaching to a running lab: the handle every later command works through (its name, kind, blueprint,
endpoints and containers), slurmrestd tokens, the faults put into it and their record, its status, and
the processes that work beside it once `lab up` has returned. Nothing here brings a lab up; that is
lab.bringup, below."""
