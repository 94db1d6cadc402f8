"""The lab's Run:ai API: a request in, an answer out (no sockets; :mod:`lab.runai.api.rest_server` serves it).

The driver hands every look at the cluster to :meth:`RestApi.observe` and every scrape of its
``/metrics`` to :meth:`RestApi.scraped`; telemetry and objects come from the latest look, metrics over
``start``..``end`` from the scrapes' history. Every path but ``POST /api/v1/token`` needs the bearer
token that path grants.
"""

from __future__ import annotations

import re
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lab.runai.api import auth, measures, objects, org, params, reference, telemetry
from lab.runai.api.history import History, Values, sample_times
from lab.runai.api.params import ApiError, Query, bad_request
from lab.runai.cluster_state import ClusterState, Workload


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any  # JSON


def _uuid(text: str, what: str) -> str:
    try:
        uuid.UUID(text)
    except ValueError:
        raise bad_request(f"{what} {text!r} is not a UUID") from None
    return text


Handler = Callable[["RestApi", ClusterState, Query, Mapping[str, str]], Any]
_ROUTES: list[tuple[re.Pattern[str], Handler]] = []


def _route(pattern: str) -> Callable[[Handler], Handler]:
    def register(handler: Handler) -> Handler:
        _ROUTES.append((re.compile(pattern), handler))
        return handler

    return register


class RestApi:
    def __init__(
        self,
        credentials: auth.Credentials,
        pod_image: str,
        clock: Callable[[], float] = time.time,
        history: History | None = None,
        started: float | None = None,
    ) -> None:
        self.credentials = credentials
        self.pod_image = pod_image
        self.clock = clock
        # The driver makes the API as it starts, before it creates the nodes, namespaces and queues:
        # the createdAt of the cluster and its objects.
        self.started = clock() if started is None else started
        self.history = history or History()
        self._lock = threading.Lock()
        self._cluster: ClusterState | None = None
        self._pending: Values | None = None

    # --- the driver's two hooks -----------------------------------------------------------------
    def observe(self, cluster: ClusterState) -> None:
        """One look at the cluster: the state telemetry reads, and the values the next scrape keeps."""
        values = measures.snapshot(cluster)
        with self._lock:
            self._cluster, self._pending = cluster, values

    def scraped(self, at: float) -> None:
        """Prometheus scraped ``/metrics`` at ``at``: keep the values it was served."""
        with self._lock:
            pending = self._pending
        if pending is not None:
            self.history.record(at, pending)

    # --- requests -------------------------------------------------------------------------------
    def handle(self, method: str, target: str, headers: Mapping[str, str], body: bytes = b"") -> Answer:
        """One request; ``headers`` by lower-case name."""
        split = urllib.parse.urlsplit(target)
        query = urllib.parse.parse_qs(split.query, keep_blank_values=True)
        try:
            if split.path == "/api/v1/token":
                if method != "POST":
                    raise ApiError(405, f"{method} {split.path}: the token path takes POST")
                return Answer(200, self._token(body))
            try:
                auth.verify(self.credentials, headers.get("authorization"), self.clock())
            except auth.Unauthorized as error:
                raise ApiError(401, "Unauthorized", str(error)) from None
            for pattern, handler in _ROUTES:
                match = pattern.fullmatch(split.path)
                if match is None:
                    continue
                if method != "GET":
                    raise ApiError(405, f"{method} {split.path}: the path takes GET")
                with self._lock:
                    cluster = self._cluster
                if cluster is None:
                    raise ApiError(503, "the driver has not looked at the cluster yet", "retry in a second")
                return Answer(200, handler(self, cluster, query, match.groupdict()))
            raise ApiError(404, f"no such path: {split.path}", "signals/runai.md lists the paths served")
        except ApiError as error:
            return Answer(error.code, error.body())

    def _token(self, body: bytes) -> dict[str, str]:
        """``TokenResponse``: the access token alone (the lab issues no id, refresh or external tokens)."""
        try:
            return {"accessToken": auth.grant(self.credentials, body, self.clock())}
        except auth.BadTokenRequest as error:
            raise bad_request(error.message, error.details) from None

    # --- metrics --------------------------------------------------------------------------------
    def measurements(self, scope: str, types: list[str], query: Query) -> dict[str, Any]:
        window = params.time_range(query)
        times = sample_times(window.start, window.end, window.samples)
        return {
            "measurements": [
                {
                    "type": kind,
                    "values": [
                        {"value": telemetry.number(v), "timestamp": params.iso(t)}
                        for t, v in self.history.samples(scope, kind, times)
                    ],
                }
                for kind in types
            ]
        }


def _cluster_uuid(cluster: ClusterState, text: str) -> None:
    if _uuid(text, "clusterUuid") != cluster.bp.cluster_id:
        raise ApiError(404, f"cluster {text} not found", f"this lab's cluster is {cluster.bp.cluster_id}")


def _filter_cluster(cluster: ClusterState, query: Query) -> bool:
    """``clusterId``: False when it names another cluster (no rows)."""
    text = params.single(query, "clusterId")
    return text is None or _uuid(text, "clusterId") == cluster.bp.cluster_id


def _workload(cluster: ClusterState, text: str) -> Workload:
    found = cluster.workloads.get(_uuid(text, "workloadId"))
    if found is None:
        raise ApiError(404, f"workload {text} not found", "GET /api/v1/workloads lists them")
    return found


@_route(r"/api/v1/clusters/(?P<cluster>[^/]+)/metrics")
def _cluster_metrics(api: RestApi, cluster: ClusterState, query: Query, path: Mapping[str, str]) -> Any:
    _cluster_uuid(cluster, path["cluster"])
    types = params.metric_types(query, reference.CLUSTER_METRIC_TYPES, reference.CLUSTER_METRICS_SERVED)
    return api.measurements(measures.CLUSTER, types, query)


@_route(r"/api/v1/clusters/(?P<cluster>[^/]+)/nodepools/(?P<pool>[^/]+)/metrics")
def _nodepool_metrics(api: RestApi, cluster: ClusterState, query: Query, path: Mapping[str, str]) -> Any:
    _cluster_uuid(cluster, path["cluster"])
    pools = [p.name for p in cluster.bp.node_pools]
    if path["pool"] not in pools:
        raise ApiError(404, f"node pool {path['pool']} not found", f"node pools: {', '.join(pools)}")
    types = params.metric_types(query, reference.CLUSTER_METRIC_TYPES, reference.CLUSTER_METRICS_SERVED)
    return api.measurements(measures.nodepool_scope(path["pool"]), types, query)


@_route(r"/api/v1/workloads/(?P<workload>[^/]+)/metrics")
def _workload_metrics(api: RestApi, cluster: ClusterState, query: Query, path: Mapping[str, str]) -> Any:
    w = _workload(cluster, path["workload"])
    types = params.metric_types(query, reference.WORKLOAD_METRIC_TYPES, reference.WORKLOAD_METRICS_SERVED)
    return api.measurements(measures.workload_scope(w.uid), types, query)


Rows = Callable[[ClusterState, str | None, str | None], list[telemetry.Row]]


def _telemetry_route(
    types: tuple[tuple[str, ...], tuple[str, ...]],
    group_by_fields: tuple[str, ...],
    pool_parameter: str,
    rows: Rows,
) -> Handler:
    """A telemetry path: its type and groups checked, its rows filtered by cluster, then node pool and
    department (``rows`` takes the cluster, the node pool and the department)."""

    def handler(api: RestApi, cluster: ClusterState, query: Query, path: Mapping[str, str]) -> Any:
        kind = params.telemetry_type(query, *types)
        group_by = params.group_by(query, group_by_fields)
        found = []
        if _filter_cluster(cluster, query):
            found = rows(cluster, params.single(query, pool_parameter), params.single(query, "departmentId"))
        return telemetry.response(kind, cluster.now(), found, group_by)

    return handler


_ORG_TYPES = (reference.ORG_TELEMETRY_TYPES, reference.ORG_TELEMETRY_SERVED)
# Path → telemetry types, groupBy fields, the node-pool filter's name, the rows (nodes take no departmentId).
for _path, _handler in {
    r"/api/v1/nodes/telemetry": _telemetry_route(
        (reference.NODE_TELEMETRY_TYPES, reference.NODE_TELEMETRY_SERVED),
        reference.NODE_GROUP_BY,
        "nodepoolName",
        lambda cluster, pool, _: telemetry.node_rows(cluster, pool),
    ),
    r"/api/v1/workloads/telemetry": _telemetry_route(
        (reference.WORKLOAD_TELEMETRY_TYPES, reference.WORKLOAD_TELEMETRY_TYPES),
        reference.WORKLOAD_GROUP_BY,
        "nodepoolName",
        telemetry.workload_rows,
    ),
    r"/api/v1/org-unit/projects/telemetry": _telemetry_route(
        _ORG_TYPES,
        reference.PROJECT_GROUP_BY,
        "nodepoolId",
        lambda cluster, pool, department: telemetry.queue_rows(cluster, pool, department, projects=True),
    ),
    r"/api/v1/org-unit/departments/telemetry": _telemetry_route(
        _ORG_TYPES,
        reference.DEPARTMENT_GROUP_BY,
        "nodepoolName",
        lambda cluster, pool, department: telemetry.queue_rows(cluster, pool, department, projects=False),
    ),
}.items():
    _route(_path)(_handler)


def _page(query: Query) -> tuple[int, int]:
    offset = params.integer(query, "offset", 0, 0, 2**31 - 1)
    limit = params.integer(query, "limit", reference.LIMIT_DEFAULT, reference.LIMIT_MIN, reference.LIMIT_MAX)
    return offset, limit


@_route(r"/api/v1/workloads")
def _workloads(api: RestApi, cluster: ClusterState, query: Query, path: Mapping[str, str]) -> Any:
    offset, limit = _page(query)
    sort_by = params.choice(query, "sortBy", reference.WORKLOADS_SORT_BY, reference.WORKLOAD_FIELDS_SERVED)
    order = params.choice(query, "sortOrder", reference.SORT_ORDERS, reference.SORT_ORDERS) or "asc"
    terms = params.filters(query, reference.WORKLOAD_FIELDS_SERVED)
    # The lab keeps no record of deleted workloads: deleted=true lists none.
    workloads = [] if params.boolean(query, "deleted") else list(cluster.workloads.values())
    search = params.single(query, "search")
    cid = cluster.bp.cluster_id
    return objects.listing(workloads, cid, terms, search, sort_by, order == "desc", offset, limit)


@_route(r"/api/v1/workloads/(?P<workload>[^/]+)")
def _one_workload(api: RestApi, cluster: ClusterState, query: Query, path: Mapping[str, str]) -> Any:
    return objects.workload_detailed(_workload(cluster, path["workload"]), cluster.bp.cluster_id)


@_route(r"/api/v1/workloads/(?P<workload>[^/]+)/pods")
def _workload_pods(api: RestApi, cluster: ClusterState, query: Query, path: Mapping[str, str]) -> Any:
    w = _workload(cluster, path["workload"])
    offset, limit = _page(query)
    pods = [] if params.boolean(query, "deleted") else w.pods
    page = pods[offset : offset + limit]
    body: dict[str, Any] = {"pods": [objects.pod(w, p, cluster.bp.cluster_id, api.pod_image) for p in page]}
    if offset + limit < len(pods):
        body["next"] = offset + limit
    return body


# --- the cluster, its node pools and nodes, projects and departments (after the telemetry paths,
# which the patterns of one project or department would also match) ------------------------------
def _list_query(
    query: Query, sort_fields: tuple[str, ...], filter_fields: tuple[str, ...], served: tuple[str, ...]
) -> tuple[list[params.Filter], str | None, bool, int, int]:
    """``filterBy``, ``sortBy``, ``sortOrder``, ``offset``, ``limit`` of a list of org objects."""
    offset, limit = _page(query)
    sort_by = params.choice(query, "sortBy", sort_fields, served)
    order = params.choice(query, "sortOrder", reference.SORT_ORDERS, reference.SORT_ORDERS) or "asc"
    terms = params.filters(query, filter_fields)
    for term in terms:
        if term.field not in served:
            raise bad_request(f"filterBy {term.field}: {params.NOT_EMULATED}", "served: " + ", ".join(served))
    return terms, sort_by, order == "desc", offset, limit


def _listed(key: str, page: tuple[list[Any], int | None]) -> dict[str, Any]:
    found, following = page
    body: dict[str, Any] = {key: found}
    if following is not None:
        body["next"] = following
    return body


def _one(entries: list[org.Entry], ident: str, what: str, listing: str) -> Any:
    found = next((e.body for e in entries if e.body["id"] == ident), None)
    if found is None:
        raise ApiError(404, f"{what} {ident} not found", f"GET {listing} lists them")
    return found


@_route(r"/api/v1/clusters")
def _clusters(api: RestApi, cluster: ClusterState, query: Query, path: Mapping[str, str]) -> Any:
    params.choice(query, "verbosity", reference.CLUSTER_VERBOSITY, reference.CLUSTER_VERBOSITY)
    return [org.cluster(cluster, api.started)]


@_route(r"/api/v1/clusters/(?P<cluster>[^/]+)")
def _one_cluster(api: RestApi, cluster: ClusterState, query: Query, path: Mapping[str, str]) -> Any:
    _cluster_uuid(cluster, path["cluster"])
    params.choice(query, "verbosity", reference.CLUSTER_VERBOSITY, reference.CLUSTER_VERBOSITY)
    return org.cluster(cluster, api.started)


@_route(r"/api/v1/clusters/(?P<cluster>[^/]+)/nodes")
def _nodes(api: RestApi, cluster: ClusterState, query: Query, path: Mapping[str, str]) -> Any:
    _cluster_uuid(cluster, path["cluster"])
    name = params.single(query, "nodeName")
    chosen = [n for n in cluster.nodes.values() if name is None or n.name == name]
    return {"nodes": [org.node(cluster, n, api.started) for n in chosen]}


@_route(r"/api/v1/node-pools")
def _nodepools(api: RestApi, cluster: ClusterState, query: Query, path: Mapping[str, str]) -> Any:
    fields = reference.NODEPOOL_SORT_BY
    terms, sort_by, descending, offset, limit = _list_query(
        query, fields, reference.NODEPOOL_FILTER_BY, fields
    )
    page, _ = org.select(org.nodepools(cluster, api.started), terms, sort_by, descending, offset, limit)
    return {"nodepools": page}  # the answer's schema has no next


@_route(r"/api/v1/node-pools/(?P<pool>[^/]+)")
def _one_nodepool(api: RestApi, cluster: ClusterState, query: Query, path: Mapping[str, str]) -> Any:
    return _one(org.nodepools(cluster, api.started), path["pool"], "node pool", "/api/v1/node-pools")


@_route(r"/api/v1/org-unit/projects")
def _projects(api: RestApi, cluster: ClusterState, query: Query, path: Mapping[str, str]) -> Any:
    fields = reference.PROJECT_SORT_BY
    terms, sort_by, descending, offset, limit = _list_query(
        query, fields, fields, reference.PROJECT_FIELDS_SERVED
    )
    search = params.single(query, "search")
    entries = [e for e in org.projects(cluster.bp, api.started) if not search or search in e.body["name"]]
    return _listed("projects", org.select(entries, terms, sort_by, descending, offset, limit))


@_route(r"/api/v1/org-unit/projects/(?P<project>[^/]+)")
def _one_project(api: RestApi, cluster: ClusterState, query: Query, path: Mapping[str, str]) -> Any:
    entries = org.projects(cluster.bp, api.started)
    return _one(entries, path["project"], "project", "/api/v1/org-unit/projects")


@_route(r"/api/v1/org-unit/departments")
def _departments(api: RestApi, cluster: ClusterState, query: Query, path: Mapping[str, str]) -> Any:
    fields = reference.DEPARTMENT_SORT_BY
    terms, sort_by, descending, offset, limit = _list_query(
        query, fields, fields, reference.DEPARTMENT_FIELDS_SERVED
    )
    params.choice(query, "verbosity", reference.DEPARTMENT_VERBOSITY, reference.DEPARTMENT_VERBOSITY)
    entries = org.departments(cluster.bp, api.started)
    return _listed("departments", org.select(entries, terms, sort_by, descending, offset, limit))


@_route(r"/api/v1/org-unit/departments/(?P<department>[^/]+)")
def _one_department(api: RestApi, cluster: ClusterState, query: Query, path: Mapping[str, str]) -> Any:
    entries = org.departments(cluster.bp, api.started)
    return _one(entries, path["department"], "department", "/api/v1/org-unit/departments")
