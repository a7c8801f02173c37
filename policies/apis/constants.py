"""Every Koordinator key, class name, band and resource name the policy engine reads or writes.

Names are Koordinator's spelling (apis/extension): a typo here would be an API break, so they live in
one place and nowhere else in the code base as string literals.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final


class QoSClass(StrEnum):
    """Koordinator QoS classes; "" means no class."""

    SYSTEM = "SYSTEM"
    LSE = "LSE"
    LSR = "LSR"
    LS = "LS"
    BE = "BE"
    NONE = ""


class KubernetesQoSClass(StrEnum):
    """Kubernetes QoS classes (`status.qosClass`, `GetPodQOS`)."""

    GUARANTEED = "Guaranteed"
    BURSTABLE = "Burstable"
    BEST_EFFORT = "BestEffort"


class PriorityClass(StrEnum):
    """Koordinator priority classes (bands of spec.priority); "" means none."""

    PROD = "koord-prod"
    MID = "koord-mid"
    BATCH = "koord-batch"
    FREE = "koord-free"
    NONE = ""


KNOWN_QOS_CLASSES: Final = frozenset(q.value for q in QoSClass if q is not QoSClass.NONE)
KNOWN_PRIORITY_CLASSES: Final = frozenset(p.value for p in PriorityClass if p is not PriorityClass.NONE)

# Inclusive priority bands and the value used when a class must become a number.
PRIORITY_BANDS: Final[dict[PriorityClass, tuple[int, int]]] = {
    PriorityClass.PROD: (9000, 9999),
    PriorityClass.MID: (7000, 7999),
    PriorityClass.BATCH: (5000, 5999),
    PriorityClass.FREE: (3000, 3999),
}
PRIORITY_DEFAULT_VALUES: Final[dict[PriorityClass, int]] = {
    PriorityClass.PROD: 9500,
    PriorityClass.MID: 7500,
    PriorityClass.BATCH: 5500,
    PriorityClass.FREE: 3500,
}

# Pod labels and annotations.
LABEL_QOS_CLASS: Final = "koordinator.sh/qosClass"
LABEL_KOORDINATOR_PRIORITY: Final = "koordinator.sh/priority"
LABEL_PRIORITY_CLASS: Final = "koordinator.sh/priority-class"
LABEL_MUTATING_UPDATE: Final = "pod.koordinator.sh/mutating-update"
LABEL_SKIP_ENHANCED_VALIDATION: Final = "pod.koordinator.sh/skip-enhanced-validation"
ANNOTATION_EXTENDED_RESOURCE_SPEC: Final = "node.koordinator.sh/extended-resource-spec"
ANNOTATION_RESERVE_POD: Final = "scheduling.koordinator.sh/reserve-pod"
ANNOTATION_REPLACE_RESOURCES: Final = "pod.koordinator.sh/replace-resources"

# ClusterColocationProfile metadata.
ANNOTATION_SKIP_UPDATE_RESOURCES: Final = "config.koordinator.sh/skip-update-resources"
LABEL_CONTROLLER_MANAGED: Final = "config.koordinator.sh/controller-managed"

# colocate's own keys (Koordinator ignores annotations it does not know, so a profile carrying one
# stays a valid Koordinator object). `colocate.io/enforcement: warn` on a profile's metadata makes it
# warn-only: evaluated and reported, never applied (docs/rollout.md).
COLOCATE_PREFIX: Final = "colocate.io"
ANNOTATION_ENFORCEMENT: Final = f"{COLOCATE_PREFIX}/enforcement"
ENFORCEMENT_ENFORCE: Final = "enforce"
ENFORCEMENT_WARN: Final = "warn"
ENFORCEMENT_MODES: Final = (ENFORCEMENT_ENFORCE, ENFORCEMENT_WARN)
# `colocate.io/sensitive-patch: allow` on a profile's metadata: its patch was reviewed, and
# `--refuse-sensitive-patches` lets it through (policies/admission/patch_risks.py).
ANNOTATION_SENSITIVE_PATCH: Final = f"{COLOCATE_PREFIX}/sensitive-patch"
SENSITIVE_PATCH_ALLOW: Final = "allow"

# ElasticQuota keys read by the pod validator.
LABEL_QUOTA_NAME: Final = "quota.scheduling.koordinator.sh/name"
LABEL_QUOTA_PREEMPTIBLE: Final = "quota.scheduling.koordinator.sh/preemptible"
LABEL_QUOTA_PARENT: Final = "quota.scheduling.koordinator.sh/parent"
LABEL_QUOTA_IS_PARENT: Final = "quota.scheduling.koordinator.sh/is-parent"
LABEL_QUOTA_TREE_ID: Final = "quota.scheduling.koordinator.sh/tree-id"
LABEL_QUOTA_IS_ROOT: Final = "quota.scheduling.koordinator.sh/is-root"
ANNOTATION_QUOTA_NAMESPACES: Final = "quota.scheduling.koordinator.sh/namespaces"
LABEL_QUOTA_ALLOW_FORCE_UPDATE: Final = "quota.scheduling.koordinator.sh/allow-force-update"
ANNOTATION_QUOTA_SHARED_WEIGHT: Final = "quota.scheduling.koordinator.sh/shared-weight"
LABEL_QUOTA_ALLOW_LENT_RESOURCE: Final = "quota.scheduling.koordinator.sh/allow-lent-resource"
ANNOTATION_QUOTA_MAX_STRICT_CHECK_KEYS: Final = "quota.scheduling.koordinator.sh/max-strict-check-resource-keys"
ROOT_QUOTA_NAME: Final = "koordinator-root-quota"
SYSTEM_QUOTA_NAME: Final = "koordinator-system-quota"
DEFAULT_QUOTA_NAME: Final = "koordinator-default-quota"

# ElasticQuota API (scheduling.sigs.k8s.io/v1alpha1).
ELASTIC_QUOTA_GROUP: Final = "scheduling.sigs.k8s.io"
ELASTIC_QUOTA_KIND: Final = "ElasticQuota"

# Reservation API (scheduling.koordinator.sh/v1alpha1).
RESERVATION_GROUP: Final = "scheduling.koordinator.sh"
RESERVATION_KIND: Final = "Reservation"
RESERVATION_VERSION: Final = "v1alpha1"
# Keys of the Reservation plugin (apis/extension/reservation.go, pkg/scheduler/plugins/reservation/).
ANNOTATION_RESERVATION_NAME: Final = "scheduling.koordinator.sh/reservation-name"
ANNOTATION_RESERVATION_NODE: Final = "scheduling.koordinator.sh/reservation-node"
ANNOTATION_PRE_ALLOCATION: Final = "scheduling.koordinator.sh/is-pre-allocation"
ANNOTATION_RESERVATION_AFFINITY: Final = "scheduling.koordinator.sh/reservation-affinity"
ANNOTATION_RESERVATION_ALLOCATED: Final = "scheduling.koordinator.sh/reservation-allocated"
LABEL_RESERVATION_IGNORED: Final = "scheduling.koordinator.sh/reservation-ignored"
ANNOTATION_EXACT_MATCH_RESERVATION: Final = "scheduling.koordinator.sh/exact-match-reservation"
#: the taint an unschedulable (or terminating) Reservation behaves as if it carried
TAINT_NODE_UNSCHEDULABLE: Final = "node.kubernetes.io/unschedulable"
LABEL_RESERVATION_ORDER: Final = "scheduling.koordinator.sh/reservation-order"
#: `{"resources": {...}}` overlaid on the template's requests when a Reservation becomes Available
ANNOTATION_RESERVATION_RESIZE_ALLOCATABLE: Final = "scheduling.koordinator.sh/reservation-resize-allocatable"
#: on a pre-allocation Reservation (its reserve pod): it is placed only by pre-allocating a running pod
LABEL_PRE_ALLOCATION_REQUIRED: Final = "scheduling.koordinator.sh/pre-allocation-required"

# PodMigrationJob API (apis/scheduling/v1alpha1/pod_migration_job_types.go), cluster-scoped.
POD_MIGRATION_JOB_KIND: Final = "PodMigrationJob"
# Keys of the MigrationController (pkg/descheduler/controllers/migration).
ANNOTATION_EVICT_REASON: Final = "koordinator.sh/evict-reason"
ANNOTATION_EVICT_TRIGGER: Final = "koordinator.sh/evict-trigger"
ANNOTATION_JOB_CREATED_BY: Final = "koordinator.sh/job-created-by"
ANNOTATION_PASSED_ARBITRATION: Final = "descheduler.koordinator.sh/passed-arbitration"
LABEL_RESERVATION_CREATED_BY: Final = "app.kubernetes.io/created-by"
# how one pod (or its job) asks to be evicted (migration/evictor/interpreter.go LabelEvictPolicy)
LABEL_EVICT_POLICY: Final = "koordinator.sh/evict-policy"
# what the SoftEviction policy writes instead of evicting (apis/extension/descheduling.go)
ANNOTATION_SOFT_EVICTION: Final = "scheduling.koordinator.sh/soft-eviction"

# Gang scheduling (apis/extension/coscheduling.go; PodGroup of scheduling.sigs.k8s.io/v1alpha1).
POD_GROUP_KIND: Final = "PodGroup"
POD_GROUP_GROUP: Final = ELASTIC_QUOTA_GROUP
LABEL_POD_GROUP: Final = "pod-group.scheduling.sigs.k8s.io"
LABEL_POD_GROUP_LEGACY: Final = "pod-group.scheduling.sigs.k8s.io/name"
ANNOTATION_GANG_NAME: Final = "gang.scheduling.koordinator.sh/name"
ANNOTATION_GANG_MIN_NUM: Final = "gang.scheduling.koordinator.sh/min-available"
ANNOTATION_GANG_TOTAL_NUM: Final = "gang.scheduling.koordinator.sh/total-number"
ANNOTATION_GANG_MODE: Final = "gang.scheduling.koordinator.sh/mode"
ANNOTATION_GANG_WAIT_TIME: Final = "gang.scheduling.koordinator.sh/waiting-time"
ANNOTATION_GANG_GROUPS: Final = "gang.scheduling.koordinator.sh/groups"
ANNOTATION_GANG_TIMEOUT: Final = "gang.scheduling.koordinator.sh/timeout"
GANG_MODE_STRICT: Final = "Strict"
GANG_MODE_NON_STRICT: Final = "NonStrict"

# Node annotations of resource amplification (apis/extension/node_resource_amplification.go).
ANNOTATION_AMPLIFICATION_RATIO: Final = "node.koordinator.sh/resource-amplification-ratio"
ANNOTATION_RAW_ALLOCATABLE: Final = "node.koordinator.sh/raw-allocatable"
#: a pod's own resctrl config (apis/extension/resctrl.go AnnotationResctrl): such a pod is left out
#: of its QoS class's resctrl group
ANNOTATION_RESCTRL: Final = "node.koordinator.sh/resctrl"
#: a pod's own blkio limits (apis/slo/v1alpha1/pod.go AnnotationPodBlkioQoS): `{"blocks": [...]}`
ANNOTATION_BLKIO_QOS: Final = "koordinator.sh/blkioQOS"

# Keys only the scheduler reads: LoadAwareScheduling's per-node thresholds and per-pod estimation
# overrides (apis/extension/load_aware.go).
ANNOTATION_USAGE_THRESHOLDS: Final = "scheduling.koordinator.sh/usage-thresholds"
ANNOTATION_LOAD_SCALING_FACTORS: Final = "scheduling.koordinator.sh/load-estimated-scaling-factors"
ANNOTATION_LOAD_SECONDS_AFTER_SCHEDULED: Final = "scheduling.koordinator.sh/load-estimated-seconds-after-pod-scheduled"
ANNOTATION_LOAD_SECONDS_AFTER_INITIALIZED: Final = "scheduling.koordinator.sh/load-estimated-seconds-after-initialized"

# The slo-controller-config ConfigMap and its strategy documents (apis/configuration).
LABEL_CONFIGMAP_TYPE: Final = "koordinator.sh/configmap-type"
SLO_CONFIG_TYPE: Final = "slo-controller-config"
SLO_CONFIG_NAMESPACE: Final = "koordinator-system"
SLO_CONFIG_NAME: Final = "slo-controller-config"
COLOCATION_CONFIG_KEY: Final = "colocation-config"
RESOURCE_THRESHOLD_CONFIG_KEY: Final = "resource-threshold-config"
RESOURCE_QOS_CONFIG_KEY: Final = "resource-qos-config"
SYSTEM_CONFIG_KEY: Final = "system-config"
CPU_BURST_CONFIG_KEY: Final = "cpu-burst-config"
HOST_APPLICATION_CONFIG_KEY: Final = "host-application-config"
CPU_NORMALIZATION_CONFIG_KEY: Final = "cpu-normalization-config"
RESOURCE_AMPLIFICATION_CONFIG_KEY: Final = "resource-amplification-config"

# What the slo-controller (koord-manager) reads and writes on Nodes and NodeResourceTopologies
# (apis/extension/node_colocation.go, node_resource_amplification.go, cpu_normalization.go,
# apis/slo/v1alpha1/nodemetric_types.go).
ANNOTATION_NODE_COLOCATION_STRATEGY: Final = "node.koordinator.sh/colocation-strategy"
LABEL_CPU_RECLAIM_RATIO: Final = "node.koordinator.sh/cpu-reclaim-ratio"
LABEL_MEMORY_RECLAIM_RATIO: Final = "node.koordinator.sh/memory-reclaim-ratio"
LABEL_MID_STATIC_CPU_RESERVED_RATIO: Final = "node.koordinator.sh/mid-static-cpu-reserved-ratio"
LABEL_MID_STATIC_MEMORY_RESERVED_RATIO: Final = "node.koordinator.sh/mid-static-memory-reserved-ratio"
ANNOTATION_ORIGIN_EXTENDED_ALLOCATABLE: Final = "node.koordinator.sh/originExtendedAllocatable"
ANNOTATION_THIRD_PARTY_ALLOCATIONS: Final = "node.koordinator.sh/thirdPartyAllocations"
ANNOTATION_CPU_NORMALIZATION_RATIO: Final = "node.koordinator.sh/cpu-normalization-ratio"
LABEL_CPU_NORMALIZATION_ENABLED: Final = "node.koordinator.sh/cpu-normalization-enabled"
ANNOTATION_CPU_BASIC_INFO: Final = "node.koordinator.sh/cpu-basic-info"
ANNOTATION_NETWORK_BANDWIDTH: Final = "node.koordinator.sh/network-bandwidth"

# Resource names.
RESOURCE_CPU: Final = "cpu"
RESOURCE_MEMORY: Final = "memory"
RESOURCE_EPHEMERAL_STORAGE: Final = "ephemeral-storage"
RESOURCE_PODS: Final = "pods"
BATCH_CPU: Final = "kubernetes.io/batch-cpu"
BATCH_MEMORY: Final = "kubernetes.io/batch-memory"
MID_CPU: Final = "kubernetes.io/mid-cpu"
MID_MEMORY: Final = "kubernetes.io/mid-memory"

# cpu/memory -> extended name, per priority class that has a mapping (koord-prod, koord-free and
# none have none).
EXTENDED_RESOURCE_NAMES: Final[dict[PriorityClass, dict[str, str]]] = {
    PriorityClass.BATCH: {RESOURCE_CPU: BATCH_CPU, RESOURCE_MEMORY: BATCH_MEMORY},
    PriorityClass.MID: {RESOURCE_CPU: MID_CPU, RESOURCE_MEMORY: MID_MEMORY},
}

# Device resources (apis/extension/device_share.go, pkg/webhook/pod/mutating/device_resource_spec.go).
GPU: Final = "koordinator.sh/gpu"
GPU_CORE: Final = "koordinator.sh/gpu-core"
GPU_MEMORY: Final = "koordinator.sh/gpu-memory"
GPU_MEMORY_RATIO: Final = "koordinator.sh/gpu-memory-ratio"
GPU_SHARED: Final = "koordinator.sh/gpu.shared"
DEVICE_RESOURCES: Final = frozenset({GPU, GPU_CORE, GPU_MEMORY, GPU_MEMORY_RATIO, GPU_SHARED})
NVIDIA_GPU: Final = "nvidia.com/gpu"
AMD_GPU: Final = "amd.com/gpu"
DCU_GPU: Final = "dcu.com/gpu"
#: whole-GPU resources of the device plugins: N means N whole cards (apis/extension/device_share.go)
WHOLE_GPU_RESOURCES: Final = (NVIDIA_GPU, AMD_GPU, DCU_GPU)

# Device API (scheduling.koordinator.sh/v1alpha1 Device) and the pod annotation DeviceShare writes.
DEVICE_KIND: Final = "Device"
ANNOTATION_DEVICE_ALLOCATED: Final = "scheduling.koordinator.sh/device-allocated"

# NodeNUMAResource keys (apis/extension/numa_aware.go) and NodeResourceTopology (topology.node.k8s.io);
# the resource-status, cpu-topology and node reservation annotations are with the koordlet's below.
NODE_RESOURCE_TOPOLOGY_KIND: Final = "NodeResourceTopology"
ANNOTATION_RESOURCE_SPEC: Final = "scheduling.koordinator.sh/resource-spec"
ANNOTATION_NUMA_TOPOLOGY_SPEC: Final = "scheduling.koordinator.sh/numa-topology-spec"
LABEL_NODE_CPU_BIND_POLICY: Final = "node.koordinator.sh/cpu-bind-policy"
LABEL_NODE_NUMA_TOPOLOGY_POLICY: Final = "node.koordinator.sh/numa-topology-policy"
LABEL_NODE_NUMA_ALLOCATE_STRATEGY: Final = "node.koordinator.sh/numa-allocate-strategy"

# ClusterColocationProfile API.
PROFILE_GROUP: Final = "config.koordinator.sh"
PROFILE_VERSION: Final = "v1alpha1"
PROFILE_API_VERSION: Final = f"{PROFILE_GROUP}/{PROFILE_VERSION}"
PROFILE_KIND: Final = "ClusterColocationProfile"

# Node agent (koordlet): what a node, a pod and a NodeResourceTopology say about CPUs and eviction.
ANNOTATION_NODE_RESERVATION: Final = "node.koordinator.sh/reservation"  # {"resources": {...}, "cpus": "0-1"}
ANNOTATION_CPU_TOPOLOGY: Final = "node.koordinator.sh/cpu-topology"  # {"detail": [{"id", "core", "socket", "node"}]}
ANNOTATION_SYSTEM_QOS_RESOURCE: Final = "node.koordinator.sh/system-qos-resource"  # {"cpuset": "0-1"}
ANNOTATION_RESOURCE_STATUS: Final = "scheduling.koordinator.sh/resource-status"  # {"cpuset": "2-3"}
ANNOTATION_EVICTION_PRIORITY: Final = "koordinator.sh/eviction-priority"
ANNOTATION_CPU_BURST: Final = "koordinator.sh/cpuBurst"  # {"policy": "cpuBurstOnly", ...}

# Descheduling (koord-descheduler / sigs.k8s.io/descheduler)
ANNOTATION_DESCHEDULER_EVICT: Final = "descheduler.alpha.kubernetes.io/evict"
LABEL_EVICTION_ENABLED: Final = "koordinator.sh/eviction-enabled"
#: a JSON list of the koordlet features allowed to evict the pod (absent: all of them)
ANNOTATION_EVICTION_POLICY: Final = "koordinator.sh/eviction-policy"
ANNOTATION_MIRROR_POD: Final = "kubernetes.io/config.mirror"
ANNOTATION_CONFIG_SOURCE: Final = "kubernetes.io/config.source"
ANNOTATION_POD_DELETION_COST: Final = "controller.kubernetes.io/pod-deletion-cost"
ANNOTATION_EVICTION_COST: Final = "scheduling.koordinator.sh/eviction-cost"
SYSTEM_CRITICAL_PRIORITY: Final = 2_000_000_000
SYSTEM_CRITICAL_PRIORITY_CLASSES: Final = frozenset({"system-cluster-critical", "system-node-critical"})
