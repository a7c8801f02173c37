"""The scheduling framework: extension-point protocols, Status, CycleState, NodeInfo and the runtime
that runs one profile's plugins (Kubernetes `framework/interface.go` plus Koordinator's
FrameworkExtender, `pkg/scheduler/frameworkext/`)."""
