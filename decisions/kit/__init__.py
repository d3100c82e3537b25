"""The kit a domain is built from: its ``Domain`` entry, job, spec, report, checkpoints and parts.

The kit imports only ``decisions.core`` and ``decisions.errors``; the platform imports the kit.
"""
