"""Mobility domains: traffic-signal control on SUMO (``traffic``)."""
