"""Scheduling framework, scheduler plugins, koordlet QoS manager and descheduler."""
