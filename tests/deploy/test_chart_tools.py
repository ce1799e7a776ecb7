#!/usr/bin/env python3
"""charts/leasehold checked with the Helm ecosystem's own tools, built from pinned Go modules by
tests/release/tools/build.sh (no cluster needed):

    test_chart_tools.py [--helm BIN] [--tools DIR] CHECK...
        CHECK: ct_lint kubeconform (default: both)

--tools is the folder of ct and kubeconform (default build/release-tools/bin); helm is --helm,
else $LEASEHOLD_HELM, else build/realkube/bin/helm.

ct_lint      chart-testing's `ct lint --config tests/deploy/ct.yaml` (charts/leasehold) with
             this project's helm and Debian's yamllint on PATH: yamllint of Chart.yaml and
             values.yaml with ct's own lintconf.yaml (etc/ of the pinned module), then
             `helm lint --strict --kube-version <the real server's>`. Yamale, which ct runs for
             its Chart.yaml schema, is a Python package that neither Debian bookworm nor the Go
             module proxy has: ct.yaml says validate-chart-schema: false (tests/README.md).
             Copies of the chart with a duplicate key in values.yaml (yamllint) and a template
             of an API removed in 1.25 (helm lint) fail it: the check can fail.
kubeconform  every variant of values the chart tests render (test_chart.py's and run mode's,
             placement, PDB, leases, the injector as policies and as a webhook (in the cluster,
             with cert-manager, outside), podLabel's and shard mode's policies, the renew
             interval, monitoring, the dashboard, the native sidecar on and off by
             --kube-version, the subchart of the chart README)
             `helm template`d and validated by `kubeconform -strict` against JSON schemas of
             Kubernetes v1.37's OpenAPI: api/openapi-spec/swagger.json of the k8s.io/kubernetes
             module tests/realkube builds kube-apiserver from (json_schemas below), and of the
             Prometheus Operator's CRDs from tests/realkube/promcrds' module (converted by
             kubeconform's own scripts/openapi2jsonschema.py). Every object must be Valid: none
             skipped for want of a schema but cert-manager's Issuer and Certificate (NO_SCHEMA
             says why). A misspelt field in the pod spec, an unknown field in
             the PodMonitor's spec and a kind with no schema are refused: the check can fail.

The modules' files come from the Go module cache (`go mod download -json`, the pins' go.sum);
the JSON schemas are made once per set of inputs into build/kube-json-schemas/KEY.
"""
import hashlib
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import test_chart  # noqa: E402  (VARIANTS, RUN_MODE_VARIANTS, make_parent_chart, copy_chart)
import test_chart_values as values  # noqa: E402  (the values each of its checks renders)
from leasehold_testing import Failure, check, chart_suite, log  # noqa: E402
from leasehold_testing.helm import CHART, NAMESPACE, RELEASE, documents  # noqa: E402
from leasehold_testing.paths import ROOT  # noqa: E402

HERE = Path(__file__).resolve().parent
CT_CONFIG = HERE / "ct.yaml"
CT_MODULE = ("tests/release/tools/chart-testing", "github.com/helm/chart-testing/v3")
KUBECONFORM_MODULE = ("tests/release/tools/kubeconform", "github.com/yannh/kubeconform")
KUBERNETES_MODULE = ("tests/realkube", "k8s.io/kubernetes")
PROM_MODULE = ("tests/realkube/promcrds", "github.com/prometheus-operator/prometheus-operator")
# The CRDs of the kinds the chart renders (PodMonitor, ServiceMonitor, PrometheusRule).
PROM_CRDS = ("podmonitors", "servicemonitors", "prometheusrules")
# cert-manager's kinds (injector.webhook.certManager.enabled) have no schema here: the project
# pins no cert-manager module to take its CRDs from, and no test installs cert-manager.
# kubeconform skips them (-skip, reported as skipped); test_chart_values.py checks their fields.
NO_SCHEMA = {"Issuer": "cert-manager.io/v1", "Certificate": "cert-manager.io/v1"}
SCHEMA_CACHE = ROOT / "build/kube-json-schemas"
GO = "/usr/local/go/bin/go"


def module_dir(folder, module):
    """The pinned module's files in the Go module cache (downloaded once, checked by go.sum)."""
    env = {**os.environ, "GOFLAGS": "-mod=readonly",
           "PATH": f"{Path(GO).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
    try:
        r = subprocess.run([GO, "mod", "download", "-json", module], cwd=ROOT / folder, env=env,
                           capture_output=True, text=True, timeout=600)
    except FileNotFoundError:
        raise Failure(f"{GO}: no Go toolchain, needed for {module}'s files") from None
    check(r.returncode == 0, f"go mod download {module} in {folder}: {r.stdout}{r.stderr}")
    return Path(json.loads(r.stdout)["Dir"])


def tool(args, name):
    path = args.tools / name
    check(path.is_file() and os.access(path, os.X_OK),
          f"{path}: not built; tests/release/tools/build.sh builds it (or pass --tools)")
    return path


# --- ct lint ----------------------------------------------------------------------------------

# Copies of the chart that ct lint must refuse: (file, text appended, a fragment of its output).
CT_BROKEN = {
    "duplicate key in values.yaml (yamllint)": (
        "values.yaml", "podLabel: leasehold.io/leader\n", "duplication of key \"podLabel\""),
    # helm lint with ct's --helm-lint-extra-args (--kube-version): test_chart.py's case.
    "API removed in 1.25 (helm lint)": test_chart.BROKEN["API removed in 1.25"],
}


def ct_lint(args, helm, chart_dirs, charts):
    """`ct lint` as ct.yaml says, on these chart folders; the finished process."""
    lintconf = module_dir(*CT_MODULE) / "etc/lintconf.yaml"
    argv = [str(tool(args, "ct")), "lint", "--config", str(CT_CONFIG),
            "--chart-dirs", ",".join(map(str, chart_dirs)), "--charts", ",".join(map(str, charts)),
            "--lint-conf", str(lintconf),
            "--helm-lint-extra-args", f"--strict --kube-version {helm.kube_version}"]
    # ct finds helm and yamllint on PATH; its HOME (~/.ct) and helm's state are the test's.
    env = {**helm.env, "PATH": f"{helm.path.parent}:/usr/bin:/bin"}
    r = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    log("$ " + " ".join(argv[1:]))
    return r


def check_ct_lint(helm, args):
    r = ct_lint(args, helm, [CHART.parent], [CHART])
    out = r.stdout + r.stderr
    check(r.returncode == 0 and "All charts linted successfully" in out, f"ct lint:\n{out}")
    lines = [ln.strip() for ln in out.splitlines() if re.search(r"^\[|chart\(s\)", ln.strip())]
    log(f"ok: ct lint: yamllint (ct's lintconf.yaml) and helm lint --strict: {'; '.join(lines)}")
    with tempfile.TemporaryDirectory() as tmp:
        for what, (rel, text, want) in CT_BROKEN.items():
            chart = test_chart.copy_chart(Path(tmp) / test_chart.slug(what) / "leasehold")
            path = chart / rel
            path.write_text((path.read_text() if path.exists() else "") + text)
            r = ct_lint(args, helm, [chart.parent], [chart])
            out = r.stdout + r.stderr
            check(r.returncode != 0 and want in out, f"ct lint of {what}: expected a failure "
                  f"naming {want!r}:\n{out}")
            log(f"ok: ct lint refuses {what}: {test_chart.first_line(out, want)}")


# --- kubeconform ------------------------------------------------------------------------------


def strict_openapi(node, required=()):
    """A swagger 2.0 definition as kubeconform's strict schemas have it (as
    instrumenta/openapi2jsonschema --strict makes them for kubernetes-json-schema): no property
    but the named ones (additionalProperties false wherever properties are listed), optional
    ones may be null as the API server takes them, int-or-string is either."""
    if isinstance(node, list):
        return [strict_openapi(v) for v in node]
    if not isinstance(node, dict):
        return node
    if node.get("format") == "int-or-string":
        return {"oneOf": [{"type": "string"}, {"type": "integer"}]}
    out = {k: strict_openapi(v) for k, v in node.items() if k != "properties"}
    if "properties" in node:
        required = set(node.get("required", ()))
        out["properties"] = {}
        for name, prop in node["properties"].items():
            prop = strict_openapi(prop)
            if name not in required and isinstance(prop.get("type"), str):
                prop["type"] = [prop["type"], "null"]
            out["properties"][name] = prop
        out.setdefault("additionalProperties", False)
    return out


def write_core_schemas(swagger, out):
    """One file per group/version/kind, named as kubeconform looks them up
    ({kind}-{group's first label}-{version}.json, core: {kind}-{version}.json), each a $ref into
    _definitions.json: the definitions reference each other (and JSONSchemaProps itself), so they
    stay in one file rather than inlined into each kind's. Returns the number of kinds."""
    defs = json.loads(swagger.read_text())["definitions"]
    strict = {name: strict_openapi(d) for name, d in defs.items()}
    # resource.Quantity is "type: string" in the OpenAPI; the server takes numbers too (cpu: 1).
    strict["io.k8s.apimachinery.pkg.api.resource.Quantity"] = {
        "oneOf": [{"type": "string"}, {"type": "number"}]}
    (out / "_definitions.json").write_text(json.dumps({"definitions": strict}))
    kinds = 0
    for name, d in defs.items():
        for gvk in d.get("x-kubernetes-group-version-kind", ()):
            group = gvk["group"].split(".")[0]
            stem = gvk["kind"].lower() + (f"-{group}" if group else "") + f"-{gvk['version']}"
            (out / f"{stem}.json").write_text(
                json.dumps({"$ref": f"_definitions.json#/definitions/{name}"}))
            kinds += 1
    return kinds


def json_schemas():
    """The folder of JSON schemas kubeconform reads: made once per swagger.json, CRDs, converter
    and this code, into build/kube-json-schemas/KEY (written beside, then renamed)."""
    swagger = module_dir(*KUBERNETES_MODULE) / "api/openapi-spec/swagger.json"
    crd_dir = module_dir(*PROM_MODULE) / "example/prometheus-operator-crd"
    crds = [crd_dir / f"monitoring.coreos.com_{n}.yaml" for n in PROM_CRDS]
    script = module_dir(*KUBECONFORM_MODULE) / "scripts/openapi2jsonschema.py"
    h = hashlib.sha256()
    for path in (swagger, *crds, script):
        h.update(path.read_bytes())
    h.update(inspect.getsource(strict_openapi).encode() + inspect.getsource(write_core_schemas)
             .encode())
    out = SCHEMA_CACHE / h.hexdigest()[:16]
    if (out / "_definitions.json").is_file():
        log(f"JSON schemas: {out} (made before)")
        return out
    SCHEMA_CACHE.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=out.name + ".tmp.", dir=SCHEMA_CACHE))
    try:
        kinds = write_core_schemas(swagger, tmp)
        # kubeconform's converter writes into its working folder; DENY_ROOT_ADDITIONAL_PROPERTIES
        # makes the top level strict too, as the core kinds' are.
        env = {**os.environ, "FILENAME_FORMAT": "{kind}-{group}-{version}",
               "DENY_ROOT_ADDITIONAL_PROPERTIES": "1"}
        r = subprocess.run([sys.executable, str(script), *map(str, crds)], cwd=tmp, env=env,
                           capture_output=True, text=True, timeout=120)
        check(r.returncode == 0, f"openapi2jsonschema.py: {r.stdout}{r.stderr}")
        tmp.chmod(0o755)
        try:
            tmp.rename(out)
        except OSError:  # another run made it meanwhile
            shutil.rmtree(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    log(f"JSON schemas: {kinds} kinds of {swagger.relative_to(swagger.parents[2])} "
        f"(k8s.io/kubernetes {swagger.parents[2].name.split('@')[1]}) and the CRDs "
        f"{', '.join(PROM_CRDS)} into {out}")
    return out


def kubeconform(args, helm, schemas, files):
    """kubeconform -strict on the files; {file: [(kind, name, status, message)]}."""
    argv = [str(tool(args, "kubeconform")), "-strict", "-summary", "-verbose", "-output", "json",
            "-kubernetes-version", helm.kube_version, "-n", "2",
            "-skip", ",".join(f"{v}/{k}" for k, v in NO_SCHEMA.items()), "-schema-location",
            f"{schemas}/{{{{ .ResourceKind }}}}{{{{ .KindSuffix }}}}.json", *map(str, files)]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    try:
        report = json.loads(r.stdout)
    except json.JSONDecodeError:
        raise Failure(f"kubeconform said (exit {r.returncode}): {r.stdout}{r.stderr}") from None
    out = {str(f): [] for f in files}
    for res in report.get("resources") or ():
        if res["status"] != "statusEmpty":  # helm's empty documents
            out[res["filename"]].append((res["kind"], res["name"], res["status"],
                                         res.get("msg", "")))
    return out


def variants():
    """{what: (values, extra helm args)}: every kind of rendering the chart tests check."""
    out = {what: (o, []) for what, o in {**test_chart.VARIANTS,
                                         **test_chart.RUN_MODE_VARIANTS}.items()}
    out.update({
        "pod placement and pulling": (values.POD_KNOBS, []),
        "pdb (maxUnavailable)": ({"pdb": {"enabled": True}}, []),
        "pdb (minAvailable 50%)": ({"pdb": {"enabled": True, "minAvailable": "50%",
                                            "maxUnavailable": ""}}, []),
        "leases list": ({"leases": values.LEASES}, []),
        "injector (skipVersionCheck)": ({**values.INJECTOR, "injector": {
            "enabled": True, "skipVersionCheck": True}}, []),
        "injector (--api-versions)": (values.INJECTOR, values.MAP_API),
        "injector webhook (mode auto, no MutatingAdmissionPolicy)": (values.INJECTOR, []),
        "injector webhook with cert-manager": (
            values.injector("webhook", certManager={"enabled": True}), []),
        "injector webhook served outside the cluster": (values.injector(
            "webhook", url="https://inject.example.com:8443/mutate",
            caBundle="LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg=="), []),
        "shard mode's Lease policy": ({"shards": 3}, values.VAP_API),
        "renew interval": ({"timings": {"renewInterval": "1s"}}, []),
        "podLabel's admission policy": ({"podLabel": "leasehold.io/leader"}, values.VAP_API),
        "monitoring (--api-versions monitoring.coreos.com/v1)": (
            values.MONITORING, ["--api-versions", "monitoring.coreos.com/v1"]),
        "monitoring (monitoringCRDs installed) and the dashboard": (
            {**values.MONITORING, "monitoringCRDs": "installed", "dashboard": {"enabled": True}},
            []),
        "classic sidecar (Kubernetes 1.28)": ({}, ["--kube-version", "1.28.0"]),
        "native sidecar forced (Kubernetes 1.28)": ({"sidecar": {"native": True}},
                                                    ["--kube-version", "1.28.0"]),
    })
    return out


def render_all(helm, jobs, tmp):
    """{what: the file of `helm template`'s output} of JOBS {what: ((chart, release), values,
    extra args)}, two at a time: the webhook's renderings make RSA keys (genCA)."""
    argv = {what: ["template", release, chart, "--namespace", NAMESPACE, "--kube-version",
                   helm.kube_version, *helm.value_args(overrides), *extra]
            for what, ((chart, release), overrides, extra) in jobs.items()}  # values files: here
    with ThreadPoolExecutor(max_workers=2) as pool:
        outs = dict(zip(argv, pool.map(lambda a: helm.run(*a).stdout, argv.values())))
    files = {}
    for what, text in outs.items():
        files[what] = tmp / f"{test_chart.slug(what)}.yaml"
        files[what].write_text(text)
    return files


def check_kubeconform(helm, args):
    schemas = json_schemas()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        parent = test_chart.make_parent_chart(tmp / "subchart")
        jobs = {what: ((CHART, RELEASE), *variant) for what, variant in variants().items()}
        jobs["subchart (chart README)"] = ((parent, "shop"), {}, [])
        files, kinds = render_all(helm, jobs, tmp), set()
        for path in sorted((ROOT / "manifests").glob("*.yaml")):
            files[f"manifests/{path.name}"] = path
        results = kubeconform(args, helm, schemas, files.values())
        for what, path in files.items():
            docs = [d for _, d in documents(path.read_text())]
            got = results[str(path)]
            bad = [f"{k}/{n}: {s} {m}" for k, n, s, m in got
                   if s != "statusValid" and not (s == "statusSkipped" and k in NO_SCHEMA)]
            check(not bad, f"kubeconform -strict, {what}:\n" + "\n".join(bad))
            check(len(got) == len(docs), f"{what}: kubeconform saw {len(got)} objects of "
                  f"{len(docs)} rendered: {got}")
            kinds |= {k for k, _, s, _ in got if s == "statusValid"}
            skipped = sorted(k for k, _, s, _ in got if s == "statusSkipped")
            log(f"ok: kubeconform -strict, {what}: {len(got) - len(skipped)} objects valid "
                f"({', '.join(sorted({k for k, _, s, _ in got if s == 'statusValid'}))})"
                + (f"; skipped, no schema: {', '.join(skipped)}" if skipped else ""))
        log(f"ok: {len(files)} renderings and manifests, {len(kinds)} kinds, all valid against "
            f"Kubernetes {helm.kube_version}'s OpenAPI and the monitoring.coreos.com CRDs, none "
            f"skipped but cert-manager's {', '.join(NO_SCHEMA)}")
        check_kubeconform_refuses(args, helm, schemas, tmp, files)


def check_kubeconform_refuses(args, helm, schemas, tmp, files):
    """The same schemas refuse what the API server would: the check can fail."""
    default = [d for _, d in documents(files["defaults"].read_text())]
    monitoring = [d for _, d in documents(files["monitoring (--api-versions "
                                              "monitoring.coreos.com/v1)"].read_text())]
    deployment = next(d for d in default if d["kind"] == "Deployment")
    deployment["spec"]["template"]["spec"]["initContainers"][0]["restartPolcy"] = "Always"
    pod_monitor = next(d for d in monitoring if d["kind"] == "PodMonitor")
    pod_monitor["spec"]["podMetricsEndpoint"] = pod_monitor["spec"].pop("podMetricsEndpoints")
    unknown = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    cases = {"a misspelt field in the sidecar": (deployment, "restartPolcy"),
             "an unknown field in the PodMonitor's spec": (pod_monitor, "podMetricsEndpoint"),
             "a kind with no schema": (unknown, "could not find schema")}
    paths = {}
    for what, (doc, _) in cases.items():
        paths[what] = tmp / f"bad-{test_chart.slug(what)}.yaml"
        paths[what].write_text(yaml.safe_dump(doc))
    results = kubeconform(args, helm, schemas, paths.values())
    for what, (doc, want) in cases.items():
        got = results[str(paths[what])]
        check(len(got) == 1 and got[0][2] in ("statusInvalid", "statusError")
              and want in got[0][3], f"kubeconform must refuse {what} naming {want!r}: {got}")
        said = re.sub(r"^.* - (at ')", r"\1", got[0][3])  # past the schema file's name
        log(f"ok: kubeconform refuses {what}: {said[:200]}")


CHECKS = {"ct_lint": check_ct_lint, "kubeconform": check_kubeconform}


def main():
    ap = chart_suite.parser()
    ap.add_argument("--tools", type=Path, default=ROOT / "build/release-tools/bin",
                    help="the folder of ct and kubeconform (tests/release/tools/build.sh)")
    args = chart_suite.parse_names(ap, CHECKS, "check")
    return chart_suite.run_offline(args, args.checks or list(CHECKS),
                                   lambda helm, name: CHECKS[name](helm, args))


if __name__ == "__main__":
    sys.exit(main())
