"""The quota tree's lazy, incremental refresh agrees with a tree built from scratch."""

import random

import pytest

from scheduler_plugins.scheduler.plugins.elasticquota.args import parse_args
from scheduler_plugins.scheduler.plugins.elasticquota.manager import QuotaManager
from scheduler_plugins.scheduler.podinfo import PodInfo
from tests.support.builders import make_pod, make_quota

TOTAL = {"cpu": 100_000, "memory": 400 << 30}


def tree():
    quotas = [
        make_quota(f"p{i}", is_parent=True, min={"cpu": "10"}, max={"cpu": "80", "memory": "300Gi"}) for i in range(3)
    ]
    for i in range(3):
        for j in range(4):
            lend = {} if j % 2 else {"quota.scheduling.koordinator.sh/allow-lent-resource": "false"}
            quotas.append(
                make_quota(
                    f"p{i}-l{j}",
                    parent=f"p{i}",
                    min={"cpu": str(2 + j), "memory": "8Gi"},
                    max={"cpu": "40", "memory": "100Gi"},
                    labels=lend,
                )
            )
    return quotas


def manager(quotas, guarantee):
    m = QuotaManager(parse_args(None, ""), lambda: TOTAL, guarantee_usage=guarantee)
    for q in quotas:
        m.set_quota(q["metadata"]["name"], q)
    return m


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("guarantee", [False, True])
def test_runtimes_read_along_a_path_match_a_fresh_tree(seed, guarantee):
    rng = random.Random(seed)
    quotas = tree()
    leaves = [q["metadata"]["name"] for q in quotas if "-l" in q["metadata"]["name"]]
    live = manager(quotas, guarantee)
    pods: dict[str, PodInfo] = {}
    for step in range(60):
        if pods and rng.random() < 0.3:
            live.remove_pod(pods.pop(rng.choice(sorted(pods))).key)
        else:
            quota = rng.choice(leaves)
            pod = PodInfo(
                make_pod(
                    f"pod-{step}",
                    labels={"quota.scheduling.koordinator.sh/name": quota},
                    requests={"cpu": str(rng.randint(1, 12)), "memory": f"{rng.randint(1, 30)}Gi"},
                    node="n1" if rng.random() < 0.5 else None,
                )
            )
            pods[pod.key] = pod
            live.add_pod(pod)
        probe = rng.choice(leaves)
        fresh = manager(quotas, guarantee)
        for pod in pods.values():
            fresh.add_pod(pod)
        expected = fresh.states()[probe]
        got = live.state_of(probe)
        assert got is not None
        assert (got.runtime, got.request, got.used) == (expected.runtime, expected.request, expected.used)
    assert {n: s.runtime for n, s in live.states().items()} == {n: s.runtime for n, s in fresh.states().items()}
