"""The one kwok Stage the lab writes itself: a deleted pod's graceful termination.

kwok v0.7.0's own pod stages (copied from its module at build time, lab.kube_host.binaries) delete a pod
only once it has no finalizers (``pod-delete``). A Job's pods carry ``batch.kubernetes.io/job-tracking``,
which the Job controller removes only when the pod is terminal, so a pod KAI evicts would hang in
Terminating and its Job would never replace it. A real kubelet stops the containers of a pod being
deleted and reports a terminal phase; this stage does that: SIGTERM's exit code 143 and phase Failed
(kubelet since Kubernetes 1.27 gives deleted pods a terminal phase before they go).
"""

from __future__ import annotations

POD_TERMINATE = """\
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: lab-pod-terminate
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'Exists'
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Running'
      - 'Pending'
  weight: 1
  delay:
    durationMilliseconds: 1000
  next:
    statusTemplate: |
      {{ $now := Now }}
      containerStatuses:
      {{ range $index, $item := .spec.containers }}
      - image: {{ $item.image | Quote }}
        name: {{ $item.name | Quote }}
        ready: false
        restartCount: 0
        started: false
        state:
          terminated:
            exitCode: 143
            reason: Error
            finishedAt: {{ $now | Quote }}
            startedAt: {{ $now | Quote }}
      {{ end }}
      phase: Failed
"""
