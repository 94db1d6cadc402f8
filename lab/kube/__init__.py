"""The Kubernetes path of a Run:ai lab: a real control plane and the real KAI Scheduler.

Real: etcd, kube-apiserver and kube-controller-manager v1.34.4, KAI Scheduler v0.13.0 (scheduler per
node pool, binder, podgrouper, queue controller, podgroup controller), kwok v0.7.0 as every node's
kubelet, kube-state-metrics v2.15.0. Emulated, and only this: the kubelet's GPU device assignment
(:mod:`lab.kube.devices`). Modules, one job each::

    binaries (build + cache)  pki (certificates, kubeconfigs)  rbac (who may do what)
    controlplane (the processes, in order)  manifests (blueprint -> objects)
    driver (tenancy, workloads, devices, signals)  view (API objects -> Run:ai state)  api (REST client)
"""
