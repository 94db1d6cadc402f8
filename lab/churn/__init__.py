"""`lab churn`: series churn and cardinality from a lab's Prometheus, and the ``hpc_job`` bound.

Pure modules: :mod:`window` (grid, chunks, rates), :mod:`series` (turnover, active series),
:mod:`jobs` (sacct parsing), :mod:`bound` (the bound with scrape lag), :mod:`cardinality`
(series per job, multiplier). I/O: :mod:`queries` (PromQL, sacct). Output: :mod:`report`, :mod:`plot`.
"""
