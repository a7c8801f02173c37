"""koord-descheduler: the descheduling framework and its plugins (LowNodeLoad), evicting through
the Eviction API so that the scheduler can place the replacements on colder nodes.

It never imports the scheduler (an import-linter independence contract): the two meet only in the
cluster, and in the tests through the scheduler's public command line.
"""
