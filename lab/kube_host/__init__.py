"""What the host makes for a Run:ai lab before its `runai` container starts: the Kubernetes, KAI,
kwok, kube-state-metrics and training-operator binaries (built once and cached; wrapper Go modules in
``gomod/``) and the lab's own certificates and kubeconfigs. Nothing here runs in the container; the
container's code is lab.kube."""
