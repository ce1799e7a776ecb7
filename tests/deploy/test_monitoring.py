#!/usr/bin/env python3
"""The chart's Prometheus Operator objects, alerts and Grafana dashboard (no cluster needed).

    test_monitoring.py [--helm BIN] [--promtool BIN] [--prometheus BIN] [--sidecar BIN
                       --apiserver BIN] CHECK...
        CHECK: render lint schema rules dashboard prometheus (default: all; prometheus only
               with --sidecar and --apiserver)

render      metrics.podMonitor.enabled, metrics.serviceMonitor.enabled, alerts.enabled and
            dashboard.enabled, one at a time and all together, in two variants (defaults; own
            names, Lease, probe port and pod labels): each adds exactly its objects (PodMonitor;
            Service <name>-metrics + ServiceMonitor; PrometheusRule; ConfigMap with the
            grafana_dashboard label and the dashboard JSON) and leaves every other object
            (RBAC, Deployment, test Pod) byte for byte as with the values off; off renders none.
            The monitors select the example pods, scrape the sidecar's probe port and add the
            lease label; the ServiceMonitor selects the Service through its port name.
lint        `helm lint --strict` with everything on, in both variants; yamllint --strict on
            the rendered monitoring objects and alerts-test.yaml.
schema      bad monitoring values (a string where a number goes, a typo, a label that is not a
            string, an interval without a unit) are refused by helm with the schema error.
rules       the rendered PrometheusRule passes `promtool check rules`, and
            `promtool test rules tests/deploy/prometheus/alerts-test.yaml` passes: every alert
            fires in one case and stays quiet in others. The file has a firing and a quiet case
            for each alert, and renderings with other thresholds or another namespace fail it
            (so the tests test the chart's rules, not a copy).
dashboard   the dashboard JSON has the panels the docs promise (leader per Lease, fencing token,
            renewal latency, API requests by code) and every query in it (panels and template
            variables, Grafana's variables replaced by values) passes `promtool check rules` as
            a recording rule; a broken query and an unknown variable are caught.
prometheus  a real Prometheus (/usr/bin/prometheus) scrapes three real sidecars on the test API
            server with the rendered PodMonitor's relabeling and the rendered PrometheusRule as
            its rule file: every rule evaluates without error, every dashboard query returns
            series (exactly one replica leading, the token of /leader), every metric name and
            label value the rules and the dashboard use is in the sidecars' /metrics; the
            LeaseholdNoLeader expression is empty while one leads and, with every sidecar
            stopped (SIGSTOP: scrapes time out, up 0), returns the Lease.

Why ~550 lines in one file: six checks of the same four switches that share the renderings, the
variants and the dashboard's query extraction (the `prometheus` check runs the queries and rules
the `rules` and `dashboard` checks lint); test_monitoring_real.py imports ALL_ON.
Each check is a function of 20-80 lines, one ctest entry each.
"""
import json
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

import yaml

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from leasehold_testing import Env, Failure, check, free_port, the_leader, wait_for  # noqa: E402
from leasehold_testing import chart_suite  # noqa: E402
from leasehold_testing.helm import CHART, by_kind  # noqa: E402

HERE = Path(__file__).resolve().parent
ALERTS_TEST = HERE / "prometheus/alerts-test.yaml"
DASHBOARD = CHART / "dashboards/leasehold.json"
SCHEMA_ERROR = "values don't meet the specifications of the schema"
ALERTS = ("LeaseholdNoLeader", "LeaseholdMultipleLeaders", "LeaseholdLeaderFlapping",
          "LeaseholdRenewalsFailing")

OFF = {"metrics": {"podMonitor": {"enabled": False}, "serviceMonitor": {"enabled": False}},
       "alerts": {"enabled": False}, "dashboard": {"enabled": False}}
SWITCHES = {
    "podMonitor": {"metrics": {"podMonitor": {"enabled": True}}},
    "serviceMonitor": {"metrics": {"serviceMonitor": {"enabled": True}}},
    "alerts": {"alerts": {"enabled": True}},
    "dashboard": {"dashboard": {"enabled": True}},
}
ALL_ON = {"metrics": {"podMonitor": {"enabled": True}, "serviceMonitor": {"enabled": True}},
          "alerts": {"enabled": True}, "dashboard": {"enabled": True}}
# (values, release name, namespace, Lease, probe port, pod labels the monitors must select)
VARIANTS = {
    "defaults": ({}, "leasehold", "default", "leasehold", 9102,
                 {"app.kubernetes.io/name": "leasehold",
                  "app.kubernetes.io/instance": "leasehold"}),
    "own names": ({"fullnameOverride": "web", "leaseName": "web-writer", "probePort": 9191,
                   "metrics": {"selectorLabels": {"app": "web"},
                               "podMonitor": {"labels": {"release": "kube-prometheus-stack"}},
                               "serviceMonitor": {"labels": {"release": "kube-prometheus-stack"}}},
                   "alerts": {"labels": {"release": "kube-prometheus-stack"}},
                   "dashboard": {"namespace": "monitoring",
                                 "annotations": {"grafana_folder": "leasehold"}}},
                  "web", "shop", "web-writer", 9191, {"app": "web"}),
}


def merge(*parts):
    out = {}
    for p in parts:
        for k, v in p.items():
            out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


# helm template as on a cluster that serves the Prometheus Operator's API (the chart renders
# its objects only there, or with monitoringCRDs: installed; test_chart_values.py checks that).
OPERATOR_API = ["--api-versions", "monitoring.coreos.com/v1"]


def render(helm, values, release="leasehold", namespace="default"):
    return by_kind(helm.render(values, release=release, namespace=namespace, extra=OPERATOR_API))


def added_by(name, switch):
    """The objects a switch adds, as (kind, name)."""
    return {"podMonitor": {("PodMonitor", name)},
            "serviceMonitor": {("Service", f"{name}-metrics"), ("ServiceMonitor", name)},
            "alerts": {("PrometheusRule", name)},
            "dashboard": {("ConfigMap", f"{name}-dashboard")}}[switch]


def lease_relabeling(endpoint, lease, where):
    check(endpoint["relabelings"] == [{"action": "replace", "targetLabel": "lease",
                                       "replacement": lease}],
          f"{where}: the lease={lease} relabeling: {endpoint.get('relabelings')}")


def check_objects(objs, values, name, ns, lease, port, pod_labels):
    """The monitoring objects of one rendering, as far as they are enabled."""
    labels = values.get("metrics", {})
    dep = objs.get(("Deployment", name))
    if dep is not None and not labels.get("selectorLabels"):
        tmpl = dep["spec"]["template"]
        check(all(tmpl["metadata"]["labels"].get(k) == v for k, v in pod_labels.items()),
              f"the monitors' pod labels {pod_labels} are not the example pods' "
              f"{tmpl['metadata']['labels']}")
        side = next(c for c in tmpl["spec"]["initContainers"] if c["name"] == "leasehold")
        check({"name": "lh-probes", "containerPort": port, "protocol": "TCP"} in side["ports"],
              f"the sidecar's probe port: {side['ports']}")
    pm = objs.get(("PodMonitor", name))
    if pm is not None:
        check(pm["apiVersion"] == "monitoring.coreos.com/v1" and pm["metadata"]["namespace"] == ns,
              f"PodMonitor {pm['apiVersion']} {pm['metadata']}")
        check(pm["spec"]["selector"] == {"matchLabels": pod_labels}, f"PodMonitor selector {pm}")
        (ep,) = pm["spec"]["podMetricsEndpoints"]
        check(ep["port"] == "lh-probes" and ep["path"] == "/metrics" and ep["interval"] == "30s",
              f"PodMonitor endpoint {ep}")
        lease_relabeling(ep, lease, "PodMonitor")
        for k, v in labels.get("podMonitor", {}).get("labels", {}).items():
            check(pm["metadata"]["labels"].get(k) == v, f"PodMonitor label {k}: {pm['metadata']}")
    svc = objs.get(("Service", f"{name}-metrics"))
    sm = objs.get(("ServiceMonitor", name))
    check((svc is None) == (sm is None), "the ServiceMonitor comes with its Service")
    if sm is not None:
        check(svc["spec"]["clusterIP"] == "None" and svc["spec"]["selector"] == pod_labels,
              f"metrics Service {svc['spec']}")
        (sp,) = svc["spec"]["ports"]
        check(sp == {"name": "metrics", "port": port, "targetPort": port, "protocol": "TCP"},
              f"metrics Service port {sp}")
        sel = sm["spec"]["selector"]["matchLabels"]
        check(all(svc["metadata"]["labels"].get(k) == v for k, v in sel.items()),
              f"the ServiceMonitor's selector {sel} does not select {svc['metadata']['labels']}")
        check(sel.get("leasehold.io/service") == "metrics",
              f"the ServiceMonitor must not select the leader Service too: {sel}")
        (ep,) = sm["spec"]["endpoints"]
        check(ep["port"] == sp["name"] and ep["path"] == "/metrics", f"ServiceMonitor {ep}")
        lease_relabeling(ep, lease, "ServiceMonitor")
    pr = objs.get(("PrometheusRule", name))
    if pr is not None:
        (group,) = pr["spec"]["groups"]
        names = [r["alert"] for r in group["rules"]]
        check(names == list(ALERTS), f"alerts {names}")
        for r in group["rules"]:
            check(f'namespace="{ns}", lease="{lease}"' in r["expr"],
                  f"{r['alert']} is not limited to this release's Lease: {r['expr']}")
            check(r["labels"]["severity"] in ("critical", "warning"), f"{r['alert']} severity")
            check({"summary", "description"} <= set(r["annotations"]), f"{r['alert']} annotations")
        for k, v in values.get("alerts", {}).get("labels", {}).items():
            check(pr["metadata"]["labels"].get(k) == v, f"PrometheusRule label {k}")
    cm = objs.get(("ConfigMap", f"{name}-dashboard"))
    if cm is not None:
        dash = values.get("dashboard", {})
        check(cm["metadata"]["namespace"] == (dash.get("namespace") or ns),
              f"dashboard ConfigMap namespace {cm['metadata']}")
        check(cm["metadata"]["labels"].get("grafana_dashboard") == "1",
              f"the grafana_dashboard label: {cm['metadata']['labels']}")
        for k, v in dash.get("annotations", {}).items():
            check(cm["metadata"].get("annotations", {}).get(k) == v, f"annotation {k}")
        check(list(cm["data"]) == ["leasehold.json"], f"ConfigMap keys {list(cm['data'])}")
        check(json.loads(cm["data"]["leasehold.json"]) == json.loads(DASHBOARD.read_text()),
              "the ConfigMap's dashboard is not dashboards/leasehold.json")


def check_render(helm, _args):
    for what, (values, name, ns, lease, port, pod_labels) in VARIANTS.items():
        base = render(helm, values, namespace=ns)
        kinds = {k for k, _ in base}
        check(not kinds & {"PodMonitor", "ServiceMonitor", "PrometheusRule", "ConfigMap"}
              and ("Service", f"{name}-metrics") not in base,
              f"{what}: monitoring objects with the values off: {sorted(base)}")
        check(render(helm, merge(values, OFF), namespace=ns) == base,
              f"{what}: the values set to false explicitly render differently")
        for switch, on in list(SWITCHES.items()) + [("all", ALL_ON)]:
            v = merge(values, on)
            objs = render(helm, v, namespace=ns)
            want = (set().union(*(added_by(name, s) for s in SWITCHES)) if switch == "all"
                    else added_by(name, switch))
            check(set(objs) - set(base) == want,
                  f"{what} + {switch}: added {sorted(set(objs) - set(base))}, want {sorted(want)}")
            check(set(base) <= set(objs), f"{what} + {switch}: lost {set(base) - set(objs)}")
            for key in base:
                check(objs[key] == base[key], f"{what} + {switch}: {key[0]}/{key[1]} changed")
            check_objects(objs, v, name, ns, lease, port, pod_labels)
            print(f"ok: {what} + {switch}: adds {', '.join(f'{k}/{n}' for k, n in sorted(want))};"
                  f" the {len(base)} other objects unchanged")


def check_lint(helm, _args):
    for what, (values, *_rest) in VARIANTS.items():
        out = helm.lint(merge(values, {**ALL_ON, "monitoringCRDs": "installed"})).stdout
        check("0 chart(s) failed" in out, f"helm lint --strict ({what}, all on): {out}")
        print(f"ok: helm lint --strict, {what} with monitors, alerts and dashboard on")
    with tempfile.TemporaryDirectory() as tmp:
        helm.template(ALL_ON, extra=[*OPERATOR_API, "--output-dir", tmp])
        # The dashboard ConfigMap is JSON in a string (its long lines are the queries).
        files = [f for f in sorted(Path(tmp).rglob("*.yaml"))
                 if f.name != "configmap-dashboard.yaml"] + [ALERTS_TEST]
        r = subprocess.run(["yamllint", "--strict", "-f", "parsable", "-c",
                            str(HERE / "yamllint.yaml"), *map(str, files)],
                           capture_output=True, text=True)
        check(r.returncode == 0, f"yamllint:\n{r.stdout}{r.stderr}")
        print(f"ok: yamllint --strict: the rendered monitoring objects and "
              f"{ALERTS_TEST.name} ({len(files)} files)")


BAD_VALUES = {
    "failure percentage as a fraction": ({"alerts": {"renewalFailurePercent": 0.1}},
                                         "renewalFailurePercent"),
    "misspelt switch": ({"metrics": {"podMonitor": {"enable": True}}}, "enable"),
    "label value not a string": ({"dashboard": {"labels": {"grafana_dashboard": 1}}},
                                 "grafana_dashboard"),
    "interval without a unit": ({"metrics": {"interval": "30"}}, "interval"),
    "flapping threshold zero": ({"alerts": {"flappingChanges": 0}}, "flappingChanges"),
}


def check_schema(helm, _args):
    for what, (values, key) in BAD_VALUES.items():
        r = helm.template(values, ok=False)
        out = r.stdout + r.stderr
        check(r.returncode != 0 and SCHEMA_ERROR in out and key in out,
              f"helm must refuse {what} ({values}) naming {key}: {out}")
        print(f"ok: helm refuses {what}: "
              f"{next(ln.strip() for ln in out.splitlines() if key in ln)}")


# --- rules ------------------------------------------------------------------------------------


def promtool(args, *argv, cwd=None):
    return subprocess.run([str(args.promtool), *map(str, argv)], capture_output=True, text=True,
                          cwd=cwd, timeout=120)


def rule_groups(helm, values=None, namespace="default"):
    objs = render(helm, merge({"alerts": {"enabled": True}}, values or {}), namespace=namespace)
    return {"groups": objs[("PrometheusRule", "leasehold")]["spec"]["groups"]}


def run_alert_tests(args, groups, tmp):
    (tmp / "rules.yaml").write_text(yaml.safe_dump(groups, sort_keys=False))
    shutil.copy(ALERTS_TEST, tmp / "alerts-test.yaml")
    checked = promtool(args, "check", "rules", "rules.yaml", cwd=tmp)
    tested = promtool(args, "test", "rules", "alerts-test.yaml", cwd=tmp)
    return checked, tested


def check_rules(helm, args):
    tests = yaml.safe_load(ALERTS_TEST.read_text())["tests"]
    for alert in ALERTS:
        cases = [(t["name"], c) for t in tests for c in t["alert_rule_test"]
                 if c["alertname"] == alert]
        fire = [n for n, c in cases if c["exp_alerts"]]
        quiet = {n for n, c in cases if not c["exp_alerts"]} - set(fire)
        check(fire and quiet, f"{alert}: needs a case that fires and one that stays quiet "
                              f"(fires: {fire}, quiet: {sorted(quiet)})")
        print(f"ok: {alert}: {len(fire)} case(s) fire, {len(quiet)} stay quiet")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        checked, tested = run_alert_tests(args, rule_groups(helm), tmp)
        check(checked.returncode == 0 and "SUCCESS: 4 rules found" in checked.stdout,
              f"promtool check rules: {checked.stdout}{checked.stderr}")
        print("ok: promtool check rules: the rendered PrometheusRule, 4 rules")
        check(tested.returncode == 0 and "SUCCESS" in tested.stdout,
              f"promtool test rules:\n{tested.stdout}{tested.stderr}")
        print(f"ok: promtool test rules {ALERTS_TEST.relative_to(HERE.parent.parent)}: "
              f"{len(tests)} cases pass")
        # The tests must be about the chart's rules: other values make them fail.
        for what, values, namespace, want in (
                ("alerts.flappingChanges=10", {"alerts": {"flappingChanges": 10}}, "default",
                 "LeaseholdLeaderFlapping"),
                ("alerts.renewalFailurePercent=25", {"alerts": {"renewalFailurePercent": 25}},
                 "default", "LeaseholdRenewalsFailing"),
                ("alerts.renewalFailurePercent=5", {"alerts": {"renewalFailurePercent": 5}},
                 "default", "LeaseholdRenewalsFailing"),
                ("namespace shop", {}, "shop", "LeaseholdNoLeader")):
            _, tested = run_alert_tests(args, rule_groups(helm, values, namespace), tmp)
            out = tested.stdout + tested.stderr
            check(tested.returncode != 0 and f"alertname: {want}" in out,
                  f"the alert tests must fail for a rendering with {what} ({want}):\n{out}")
            print(f"ok: a rendering with {what} fails the tests ({want})")


# --- dashboard --------------------------------------------------------------------------------

# What Grafana puts in for its variables when the dashboard asks Prometheus.
GRAFANA_VARIABLES = {"namespace": "default", "lease": ".*", "__rate_interval": "1m",
                     "__interval": "30s", "__range": "6h"}
# Panels the docs promise, with the metric their query must use.
PANELS = {"Leader per Lease": "leasehold_is_leader",
          "Fencing token": "leasehold_fencing_token",
          "Renewal latency": "leasehold_renew_duration_seconds_bucket",
          "API requests by code": "leasehold_api_requests_total"}


def substitute(expr, where):
    def one(m):
        name = m.group(1) or m.group(2)
        check(name in GRAFANA_VARIABLES, f"{where}: unknown Grafana variable ${name} in {expr}")
        return GRAFANA_VARIABLES[name]
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", one, expr)


def dashboard_queries(dash):
    """(where, PromQL with Grafana's variables replaced) of every panel target and every
    label_values(...) template variable."""
    out = []

    def panels(ps):
        for p in ps:
            yield p
            yield from panels(p.get("panels", []))
    for p in panels(dash["panels"]):
        for t in p.get("targets", []):
            out.append((f"panel {p['title']!r} {t['refId']}", t["expr"]))
    for v in dash["templating"]["list"]:
        if v["type"] != "query":
            continue
        q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
        m = re.fullmatch(r"label_values\((.*),\s*(\w+)\)", q)
        check(m, f"variable {v['name']}: not label_values(QUERY, LABEL): {q}")
        out.append((f"variable {v['name']}", m.group(1)))
    return [(where, substitute(e, where)) for where, e in out]


def recording_rules(queries):
    return {"groups": [{"name": "leasehold-dashboard", "rules": [
        {"record": f"dashboard:query_{i}", "expr": e} for i, (_, e) in enumerate(queries)]}]}


def check_dashboard(helm, args):
    dash = json.loads(DASHBOARD.read_text())
    check(dash["uid"] == "leasehold" and dash["title"] == "leasehold", "uid and title")
    titles = {p["title"]: p for p in dash["panels"]}
    for title, metric in PANELS.items():
        check(title in titles and any(metric in t["expr"] for t in titles[title]["targets"]),
              f"panel {title!r} with {metric}: {sorted(titles)}")
    check(all(p.get("datasource", {}).get("uid") == "${datasource}" for p in dash["panels"]),
          "every panel must use the dashboard's data source variable")
    queries = dashboard_queries(dash)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "dashboard-rules.yaml"
        path.write_text(yaml.safe_dump(recording_rules(queries), sort_keys=False))
        r = promtool(args, "check", "rules", path)
        check(r.returncode == 0 and f"SUCCESS: {len(queries)} rules found" in r.stdout,
              f"promtool check rules on the dashboard's queries:\n{r.stdout}{r.stderr}")
        print(f"ok: promtool check rules: the dashboard's {len(queries)} queries "
              f"({len(dash['panels'])} panels, template variables)")
        broken = queries + [("broken", 'sum by (lease (leasehold_is_leader)')]
        path.write_text(yaml.safe_dump(recording_rules(broken), sort_keys=False))
        r = promtool(args, "check", "rules", path)
        check(r.returncode != 0, "promtool accepted a broken query")
        print(f"ok: a broken query fails: {(r.stdout + r.stderr).strip().splitlines()[-1][:120]}")
    try:
        substitute("rate(x[$__auto])", "test")
        raise Failure("an unknown Grafana variable went through")
    except Failure as e:
        check("unknown Grafana variable" in str(e), str(e))
    print("ok: an unknown Grafana variable in a query is caught")


# --- prometheus -------------------------------------------------------------------------------

METRIC_NAME = re.compile(r"\b([a-z_]+)\{")
LABEL_VALUE = re.compile(r'\b(result|code|verb)="([a-z0-9]+)"')


def prom_get(port, path, **params):
    url = f"http://127.0.0.1:{port}{path}"
    if params:
        url += "?" + urllib.parse.urlencode(params)
    with urllib.request.urlopen(url, timeout=5) as r:
        body = json.loads(r.read())
    check(body.get("status") == "success", f"{path}: {body}")
    return body["data"]


def ready(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=1) as r:
            return r.status == 200
    except OSError:
        return False


def query(port, expr):
    return prom_get(port, "/api/v1/query", query=expr)["result"]


def check_prometheus(helm, args):
    check(args.sidecar and args.apiserver, "prometheus: needs --sidecar and --apiserver")
    lease = "demo"
    objs = render(helm, merge(ALL_ON, {"leaseName": lease}))
    relabel = objs[("PodMonitor", "leasehold")]["spec"]["podMetricsEndpoints"][0]["relabelings"]
    groups = {"groups": objs[("PrometheusRule", "leasehold")]["spec"]["groups"]}
    dash = json.loads(objs[("ConfigMap", "leasehold-dashboard")]["data"]["leasehold.json"])
    with Env(args.sidecar, args.apiserver) as env, tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        sidecars = env.start_sidecars(3, lease=lease)
        leader = the_leader(sidecars, 10)
        # What the PodMonitor makes of each pod: its namespace and pod labels, and the lease
        # label from the chart's relabeling (operator camelCase -> Prometheus snake_case).
        config = {
            "global": {"scrape_interval": "1s", "scrape_timeout": "500ms",
                       "evaluation_interval": "1s"},
            "rule_files": ["rules.yaml"],
            "scrape_configs": [{
                "job_name": "default/leasehold",
                "static_configs": [{"targets": [f"127.0.0.1:{s.probe_port}"],
                                    "labels": {"namespace": env.namespace, "pod": s.name}}
                                   for s in sidecars],
                "relabel_configs": [{"action": r["action"], "target_label": r["targetLabel"],
                                     "replacement": r["replacement"]} for r in relabel]}]}
        (tmp / "prometheus.yml").write_text(yaml.safe_dump(config, sort_keys=False))
        (tmp / "rules.yaml").write_text(yaml.safe_dump(groups, sort_keys=False))
        port = free_port()
        log = open(tmp / "prometheus.log", "wb")
        proc = subprocess.Popen([str(args.prometheus), f"--config.file={tmp / 'prometheus.yml'}",
                                 f"--storage.tsdb.path={tmp / 'data'}",
                                 f"--web.listen-address=127.0.0.1:{port}"],
                                stdout=log, stderr=subprocess.STDOUT, cwd=tmp)
        env.processes.append(proc)
        try:
            run_prometheus_checks(port, env, sidecars, leader, lease, groups, dash)
        except Failure:
            log.flush()
            print((tmp / "prometheus.log").read_text(errors="replace")[-3000:])
            raise
        finally:
            proc.terminate()
            proc.wait(timeout=20)
            log.close()


def run_prometheus_checks(port, env, sidecars, leader, lease, groups, dash):
    wait_for("Prometheus to be ready", lambda: ready(port), 30, 0.2)
    wait_for("three targets up", lambda: len(query(port, f'up{{lease="{lease}"}} == 1')) == 3,
             20, 0.5)
    # Enough samples for rate() over the 4 s that stand in for $__rate_interval.
    time.sleep(6)
    rules = [r for g in prom_get(port, "/api/v1/rules")["groups"] for r in g["rules"]]
    check(sorted(r["name"] for r in rules) == sorted(ALERTS), f"rules loaded: {rules}")
    wait_for("every rule evaluated", lambda: all(
        r["health"] == "ok" for g in prom_get(port, "/api/v1/rules")["groups"]
        for r in g["rules"]), 10, 0.5)
    health = ", ".join(f"{r['name']} {r['health']}" for r in rules)
    print(f"ok: Prometheus scrapes 3 sidecars (lease={lease} from the PodMonitor's relabeling); "
          f"the rendered rules evaluate: {health}")

    exposed = set()
    values = set()
    for s in sidecars:
        for line in s.metrics().splitlines():
            if line and not line.startswith("#"):
                exposed.add(re.match(r"[a-z_]+", line).group(0))
                values.update(LABEL_VALUE.findall(line))
    exprs = [r["expr"] for g in groups["groups"] for r in g["rules"]] + \
        [e for _, e in dashboard_queries(dash)]
    used = {n for e in exprs for n in METRIC_NAME.findall(e)} - {"up"}
    check(used <= exposed, f"names the rules and dashboard use that no sidecar serves: "
                           f"{sorted(used - exposed)}")
    used_values = {v for e in exprs for v in LABEL_VALUE.findall(e)}
    check(used_values <= values, f"label values not served: {sorted(used_values - values)}")
    print(f"ok: the {len(used)} metric names and the label values {sorted(used_values)} of the "
          f"rules and the dashboard are all in the sidecars' /metrics")

    GRAFANA_VARIABLES["__rate_interval"] = "4s"
    try:
        queries = dashboard_queries(dash)
    finally:
        GRAFANA_VARIABLES["__rate_interval"] = "1m"
    for where, expr in queries:
        result = query(port, expr)
        check(result, f"{where}: no series from {expr}")
    print(f"ok: all {len(queries)} dashboard queries return series from the real sidecars")
    sel = f'namespace=~"default", lease=~"{lease}"'
    leading = query(port, f"max by (lease, pod) (leasehold_is_leader{{{sel}}})")
    claims = {r["metric"]["pod"]: r["value"][1] for r in leading}
    check(claims == {s.name: ("1" if s is leader else "0") for s in sidecars},
          f"Leader per Lease: {claims}, leader {leader.name}")
    token = query(port, f"max by (lease) (leasehold_fencing_token{{{sel}}})")
    want = leader.status()["fencingToken"]
    check(len(token) == 1 and float(token[0]["value"][1]) == want,
          f"Fencing token panel {token}, /leader says {want}")
    print(f"ok: Leader per Lease shows {leader.name} alone at 1; Fencing token {want} as /leader")

    no_leader, *_ = [r["expr"] for g in groups["groups"] for r in g["rules"]]
    check(not query(port, no_leader), "LeaseholdNoLeader's expression while one leads")
    for s in sidecars:
        s.signal(signal.SIGSTOP)
    try:
        hit = wait_for("LeaseholdNoLeader's expression with every sidecar stopped",
                       lambda: query(port, no_leader), 15, 0.5)
    finally:
        for s in sidecars:
            s.signal(signal.SIGCONT)
    check([r["metric"] for r in hit] == [{"namespace": "default", "lease": lease}],
          f"LeaseholdNoLeader's expression: {hit}")
    print(f"ok: LeaseholdNoLeader's expression is empty while {leader.name} leads and returns "
          f"{hit[0]['metric']} once every sidecar is stopped (scrapes time out, up 0)")


CHECKS = {"render": check_render, "lint": check_lint, "schema": check_schema,
          "rules": check_rules, "dashboard": check_dashboard, "prometheus": check_prometheus}


def main():
    ap = chart_suite.parser()
    ap.add_argument("--promtool", type=Path, default=Path("/usr/bin/promtool"))
    ap.add_argument("--prometheus", type=Path, default=Path("/usr/bin/prometheus"))
    ap.add_argument("--sidecar", type=Path, help="the leasehold binary (for `prometheus`)")
    ap.add_argument("--apiserver", type=Path, help="the test API server (for `prometheus`)")
    args = chart_suite.parse_names(ap, CHECKS, "check")
    for tool in (args.promtool, args.prometheus):
        if not tool.is_file():
            print(f"FAIL: {tool}: not installed (scripts/install-deps.sh installs prometheus)")
            return 1
    names = args.checks or [c for c in CHECKS
                            if c != "prometheus" or (args.sidecar and args.apiserver)]
    return chart_suite.run_offline(args, names, lambda helm, name: CHECKS[name](helm, args))


if __name__ == "__main__":
    sys.exit(main())
