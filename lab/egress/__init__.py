"""Across the fence: what a site sends to a central store carries no real name. Every label value that
is a blueprint name (Slurm users and accounts; Run:ai projects, departments, queues, workloads,
namespaces and pods) is replaced by a keyed pseudonym before it leaves, the HMAC-SHA256 that the
OpenTelemetry Collector's redactionprocessor makes (signals/egress.md).

The site-side core, with no daemon: the pseudonym byte for byte as the processor makes it
(``pseudonyms``), the lab's key (``key``: ``.lab/<lab>/keys/egress/``, mode 0400, rotated atomically),
the names a lab's egress pseudonymises, from its blueprint (``names``), and finding the real name
behind a pseudonym (``reveal``). The key and the names never leave the site.
"""
