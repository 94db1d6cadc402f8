"""The workload mix: seeded Poisson arrivals per workload class, sizes and run times from traces.

Per class and step the number of submissions is Poisson(rate × step / 3600). Run time is log-normal
with the class's trace median and mean (sigma = sqrt(2 ln(mean/median))); GPUs per pod follow the
class's share table; a class's failure fraction decides, at submission, whether the run ends Failed.
All draws come from one ``random.Random`` so a seed repeats a run exactly.
"""

from __future__ import annotations

import math
import random
import uuid
from dataclasses import dataclass

from lab.blueprint.runai_blueprint import (
    NON_PREEMPTIBLE_FROM,
    PRIORITY_CLASSES,
    RunaiBlueprint,
    WorkloadClass,
)
from lab.runai.cluster_state import Workload

# k8s.io/apimachinery/pkg/util/rand alphanums (no vowels, no confusable digits) for generated names.
NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def rand_uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def suffix(rng: random.Random, length: int = 5) -> str:
    return "".join(rng.choice(NAME_ALPHABET) for _ in range(length))


def poisson(rng: random.Random, mean: float) -> int:
    """Knuth's method; means here are far below 30 per step."""
    if mean <= 0:
        return 0
    limit, count, product = math.exp(-mean), 0, rng.random()
    while product > limit:
        count += 1
        product *= rng.random()
    return count


def lognormal_runtime(rng: random.Random, median: float, mean: float) -> float:
    sigma = math.sqrt(2.0 * math.log(mean / median)) if mean > median else 0.0
    return max(1.0, rng.lognormvariate(math.log(median), sigma))


@dataclass(slots=True)
class Arrivals:
    blueprint: RunaiBlueprint
    rng: random.Random
    counter: int = 0

    def due(self, step_seconds: float) -> list[WorkloadClass]:
        """Classes to submit this step (one entry per workload)."""
        out: list[WorkloadClass] = []
        for wclass in self.blueprint.workloads:
            out.extend([wclass] * poisson(self.rng, wclass.rate_per_hour * step_seconds / 3600.0))
        return out

    def make(
        self,
        wclass: WorkloadClass,
        now: float,
        *,
        project: str | None = None,
        gpus_per_pod: int | None = None,
        run_seconds: float | None = None,
        will_fail: bool | None = None,
    ) -> Workload:
        bp = self.blueprint
        self.counter += 1
        chosen = project or self.rng.choice(wclass.projects)
        proj = bp.project(chosen)
        shares = sorted(wclass.gpus_per_pod.items())
        if gpus_per_pod is None:
            pick, acc = self.rng.random(), 0.0
            gpus_per_pod = shares[-1][0]
            for gpus, share in shares:
                acc += share
                if pick < acc:
                    gpus_per_pod = gpus
                    break
        runtime = run_seconds or lognormal_runtime(self.rng, wclass.runtime.median_s, wclass.runtime.mean_s)
        fails = self.rng.random() < wclass.failure_fraction if will_fail is None else will_fail
        priority = PRIORITY_CLASSES[wclass.priority_class]
        per_gpu = bp.resources_per_gpu
        workload = Workload(
            uid=rand_uuid(self.rng),
            name=f"{wclass.name}-{self.counter:05d}",
            project=chosen,
            department=proj.department,
            user=self.rng.choice(proj.users),
            workload_class=wclass.name,
            workload_type=wclass.workload_type,
            dcgm_class=wclass.dcgm_class,
            priority_class=wclass.priority_class,
            priority=priority,
            preemptible=priority < NON_PREEMPTIBLE_FROM,
            nodepool=wclass.nodepool or "",  # none: the pod-group assigner chooses
            pods_count=wclass.pods,
            gpus_per_pod=gpus_per_pod,
            cpu_millis_per_pod=int(per_gpu.cpu_cores * 1000 * gpus_per_pod),
            memory_bytes_per_pod=per_gpu.memory_bytes * gpus_per_pod,
            submitted_at=now,
            run_seconds_needed=runtime,
            will_fail=fails,
        )
        # 128 bits drawn and not kept: every later draw depends on them, and the captured runs name the
        # seeds they were made with.
        rand_uuid(self.rng)
        return workload
