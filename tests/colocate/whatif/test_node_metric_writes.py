"""The sampler writes each node's NodeMetric from a reading and hands that reading to the readers
(the manager, the koordlet, LoadAware) instead of having them parse the object back: what they get
must be exactly what a parse of the written object gives, step after step."""

from __future__ import annotations

import json
from pathlib import Path

from colocate.whatif.inputs import load_inputs, load_profiles, start_time
from colocate.whatif.loop import Run, RunOptions
from policies.apis.durations import parse_duration
from policies.apis.kinds import NODE_METRIC_KIND
from policies.apis.nodemetric import read_node_metric

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "whatif"


def test_every_written_node_metric_reads_as_the_reading_its_readers_are_handed() -> None:
    inputs = load_inputs(EXAMPLE / "cluster", EXAMPLE / "workload.yaml")
    options = RunOptions(start_time(inputs, None), parse_duration("20m"), parse_duration("1m"))
    run = Run(inputs, load_profiles(EXAMPLE / "profiles", "--profiles"), options)
    checked = 0
    for i in range(20):
        now = options.start + i * options.step
        run.clock.now = now
        run.step(now, [])
        for node in run.nodes:
            metric = run.store.get(NODE_METRIC_KIND, ("", node))
            assert metric is not None
            handed = read_node_metric(metric)
            assert handed.pods, node  # the example's nodes run pods: the per-pod entries are compared too
            # an API server's copy of the object: never seen by the cache, so parsed
            assert read_node_metric(json.loads(json.dumps(metric))) == handed
            assert handed.update_time == metric["status"]["updateTime"]
            checked += 1
    assert checked == 20 * len(run.nodes)
