"""Revisions of the run store's schema, one file each (``NNNN_what.py``), applied in order."""
