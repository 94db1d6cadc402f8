"""The Kubernetes path of a Run:ai lab, as it runs inside the lab's `runai` container: a real control
plane and the real KAI Scheduler, and the Run:ai driver beside them. The image carries this package
(with lab.runai, lab.dcgm and lab.blueprint); what the host makes before that container starts (the
binaries, the certificates) is lab.kube_host.

Real: etcd, kube-apiserver and kube-controller-manager v1.34.4, KAI Scheduler v0.13.0 (scheduler per
node pool, binder, podgrouper, queue controller, podgroup controller), kwok v0.7.0 as every node's
kubelet, kube-state-metrics v2.15.0. Emulated, and only this: the kubelet's GPU device assignment
(:mod:`lab.kube.devices`). Modules, one job each::

    controlplane (the processes, in order)  rbac (who may do what)  identities (who each one is)
    manifests (blueprint -> objects)  driver (tenancy, workloads, devices, signals)
    scenarios (the scripted part of each)  view (API objects -> Run:ai state)  api (REST client)
    reflector (list + watch)  stages (kwok's termination)  training_operator (its surroundings)
"""
