"""RealEnv: Env's interface on the real kube-apiserver (a namespace on a ControlPlane, the
chart's RBAC, a TcpProxy per sidecar user, counters from the audit log)."""
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from .audit_log import AuditLog
from .checks import Failure, check, wait_for
from .control_plane import ControlPlane
from .kube_time import epoch
from .kubeconfig import write_kubeconfig
from .sidecar_host import SidecarHost, keep_failed_dir
from .tcp_proxy import TcpProxy

_KIND_PATHS = {
    "Namespace": "/api/v1/namespaces",
    "ServiceAccount": "/api/v1/namespaces/{ns}/serviceaccounts",
    "Secret": "/api/v1/namespaces/{ns}/secrets",
    "Pod": "/api/v1/namespaces/{ns}/pods",
    "Role": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
    "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
    "Lease": "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases",
}


class RealEnv(SidecarHost):
    """Env's interface on the real kube-apiserver: one namespace per RealEnv on a ControlPlane
    (its own, started and stopped with it, or a shared one).

    In the namespace: the ServiceAccount, Role and RoleBinding that `helm template` of
    charts/leasehold renders for this namespace and lease (leaseName, plus `chart_values`), and
    the Lease where the chart makes it (its Role then has no create: the sidecars take the
    Lease over from its empty holder, so the first term's token is 1, not 0). Each
    sidecar user is a ServiceAccount of its own, bound to exactly that Role, with a TokenRequest
    token (bound to a Secret, so that rotate_token can revoke it). Its kubeconfig points at its
    own TcpProxy, which forwards to its apiserver (route(user, "apiserver2") in the HA mode):
    partitions, resets and latency are the proxy's. Counters come from the audit log;
    forbidden() lists every 403 a sidecar user got (run_scenarios fails a scenario on one).
    Users in use_rbac() get the given RBAC instead of the chart's."""

    real = True

    @property
    def first_token(self):
        """The first term's fencing token: 1 when the Lease was made empty beforehand (as the
        chart makes it: the first holder's write takes it over, a new term), 0 when the first
        sidecar creates it."""
        return 1 if any(d["kind"] == "Lease" for d in self.rendered or []) else 0

    def __init__(self, sidecar_bin, plane=None, ha=False, namespace=None, lease="demo",
                 chart_values=None):
        self.sidecar_bin = str(sidecar_bin)
        self.own_plane = plane is None
        self.plane = plane or ControlPlane(ha=ha)
        self.namespace = namespace or f"it-{os.urandom(3).hex()}"
        self.lease_name = lease
        self.chart_values = dict(chart_values or {})
        self.tmp = tempfile.TemporaryDirectory(prefix="leasehold-real-")
        self.dir = Path(self.tmp.name)
        self.processes = []
        self.sidecars = []
        self.tokens = {}   # user -> its current token
        self.secrets = {}  # user -> the Secret its current token is bound to
        self.proxies = {}  # user -> TcpProxy
        self.routes = {}   # user -> "apiserver" | "apiserver2"
        self.custom_rbac = set()
        self.role_name = None
        self.rendered = []

    # ---- life cycle ----------------------------------------------------------------------
    def __enter__(self):
        try:
            if self.own_plane:
                self.plane.up()
            self.audit_start = self.counter_offset = self.plane.audit.size()
            self.tokens["admin"] = self.plane.admin_token
            self.setup_namespace()
        except BaseException:
            self.__exit__(*sys.exc_info())
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        self.end_processes()
        for p in self.proxies.values():
            p.close()
        if exc_type is not None:
            self.dump_logs()
            for e in self.forbidden()[:10]:
                print("403:", self.describe_event(e))
            for c in self.plane.apiservers():
                print(f"----- {c} log (last 15 lines) -----\n{self.plane.log_tail(c, 15)}")
            keep_failed_dir(self.dir)
        if self.own_plane:
            self.plane.down()
        self.tmp.cleanup()

    @property
    def url(self):
        return self.plane.url

    @property
    def port(self):
        return self.plane.port

    @property
    def ca_path(self):
        return self.plane.ca

    def create(self, obj, exist_ok=False):
        ns = obj["metadata"].get("namespace") or self.namespace
        path = _KIND_PATHS[obj["kind"]].format(ns=ns)
        code, body = self.plane.api("POST", path, obj, ok=None)
        if code == 409 and exist_ok:
            return self.plane.api("GET", f"{path}/{obj['metadata']['name']}")[1]
        check(code in (200, 201), f"create {obj['kind']} {obj['metadata']['name']}: {code} "
                                  f"{body}")
        return body

    def setup_namespace(self):
        ns = self.namespace
        self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        # Pods need the namespace's "default" ServiceAccount (no controller-manager makes it).
        self.create({"apiVersion": "v1", "kind": "ServiceAccount",
                     "metadata": {"name": "default", "namespace": ns}})
        # here: PyYAML is needed only by RealEnv, not by every suite
        from .helm import Helm, is_hook
        values = dict({"fullnameOverride": "leasehold", "leaseName": self.lease_name},
                      **self.chart_values)
        docs = Helm().render(values, namespace=ns)
        # The Lease too, where the chart makes it (its Role has no create then); not helm
        # test's grants (hooks).
        self.rendered = [d for _, d in docs if d["kind"] in
                         ("ServiceAccount", "Role", "RoleBinding", "Lease") and not is_hook(d)]
        check([d["kind"] for d in self.rendered].count("Role") == 1,
              f"the chart rendered no single Role: {[d['kind'] for d in self.rendered]}")
        for d in self.rendered:
            self.create(d)
            if d["kind"] == "Role":
                self.role_name = d["metadata"]["name"]
                self.role = d

    # ---- users ---------------------------------------------------------------------------
    def client_name(self, user):
        return f"system:serviceaccount:{self.namespace}:{user}"

    def add_user(self, user, admin=False, token=None):
        """A ServiceAccount `user` bound to the chart's Role (unless use_rbac named it), and a
        TokenRequest token for it, which is returned. The real server mints tokens: `token`
        and `admin` are accepted for Env's signature and ignored (no sidecar is an admin)."""
        if user == "admin":
            return self.plane.admin_token
        self.create({"apiVersion": "v1", "kind": "ServiceAccount",
                     "metadata": {"name": user, "namespace": self.namespace}}, exist_ok=True)
        if user not in self.custom_rbac:
            self.create({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                         "metadata": {"name": f"{self.role_name}-sa-{user}",
                                      "namespace": self.namespace},
                         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                     "name": self.role_name},
                         "subjects": [{"kind": "ServiceAccount", "name": user,
                                       "namespace": self.namespace}]}, exist_ok=True)
            self.wait_allowed(user, "update", "leases", self.lease_name,
                              group="coordination.k8s.io")
        self.tokens[user] = self.issue_token(user)
        return self.tokens[user]

    def issue_token(self, user, seconds=7200):
        n = len([k for k in self.secrets.values() if k.startswith(f"{user}-token-")])
        secret = self.create({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                              "metadata": {"name": f"{user}-token-{n}-{os.urandom(2).hex()}",
                                           "namespace": self.namespace}})
        _, tr = self.plane.api(
            "POST", f"/api/v1/namespaces/{self.namespace}/serviceaccounts/{user}/token",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
             "spec": {"expirationSeconds": seconds,
                      "boundObjectRef": {"kind": "Secret", "apiVersion": "v1",
                                         "name": secret["metadata"]["name"],
                                         "uid": secret["metadata"]["uid"]}}})
        self.secrets[user] = secret["metadata"]["name"]
        return tr["status"]["token"]

    def authenticated(self, token, component="apiserver"):
        _, review = self.plane.api("POST", "/apis/authentication.k8s.io/v1/tokenreviews",
                                   {"apiVersion": "authentication.k8s.io/v1",
                                    "kind": "TokenReview", "spec": {"token": token}},
                                   component=component)
        return bool(review.get("status", {}).get("authenticated"))

    def rotate_token(self, user, token_file=None):
        """A new token (bound to a new Secret), written to `token_file` (if given); then the old
        one is revoked by deleting its Secret, and refused by every apiserver before this
        returns. Returns the new token."""
        old_token, old_secret = self.tokens[user], self.secrets[user]
        new = self.issue_token(user)
        if token_file:
            Path(token_file).write_text(new + "\n")
        self.plane.api("DELETE", f"/api/v1/namespaces/{self.namespace}/secrets/{old_secret}")
        for c in self.plane.apiservers():
            wait_for(f"{c} to refuse the revoked token",
                     lambda c=c: not self.authenticated(old_token, c), 10, interval=0.1)
        self.tokens[user] = new
        return new

    def wait_allowed(self, user, verb, resource, name=None, group=""):
        """Until every apiserver's RBAC authorizer (an informer: it lags the write) allows it."""
        attrs = {"namespace": self.namespace, "verb": verb, "group": group,
                 "resource": resource}
        if name:
            attrs["name"] = name
        sar = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
               "spec": {"user": self.client_name(user),
                        "groups": ["system:serviceaccounts",
                                   f"system:serviceaccounts:{self.namespace}",
                                   "system:authenticated"],
                        "resourceAttributes": attrs}}
        for c in self.plane.apiservers():
            wait_for(f"{c} to allow {user} to {verb} {resource}",
                     lambda c=c: self.plane.api(
                         "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", sar,
                         component=c)[1]["status"].get("allowed"), 10, interval=0.05)

    def use_rbac(self, users, rbac_yaml):
        """`users` get the RBAC objects of `rbac_yaml` (their namespace: this one) instead of
        the chart's Role. Call before their sidecars exist."""
        import yaml
        taken = set(users) & set(self.tokens)
        check(not taken, f"use_rbac: {sorted(taken)} already have the chart's Role")
        self.custom_rbac |= set(users)
        for doc in yaml.safe_load_all(rbac_yaml):
            if not doc:
                continue
            doc["metadata"]["namespace"] = self.namespace
            for sub in doc.get("subjects", []):
                sub["namespace"] = self.namespace
            self.create(doc)
            if doc["kind"] == "RoleBinding":  # in force on every apiserver before we go on
                role = next(d for d in yaml.safe_load_all(rbac_yaml)
                            if d and d["kind"] == "Role" and
                            d["metadata"]["name"] == doc["roleRef"]["name"])
                rule = role["rules"][0]
                for sub in doc.get("subjects", []):
                    self.wait_allowed(sub["name"], rule["verbs"][0], rule["resources"][0],
                                      (rule.get("resourceNames") or [None])[0],
                                      group=rule["apiGroups"][0])

    def create_pods(self, names):
        """Pod objects (never scheduled: no scheduler, no kubelet) for --pod-label to patch."""
        for n in names:
            self.create({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": n, "namespace": self.namespace},
                         "spec": {"automountServiceAccountToken": False,
                                  "containers": [{"name": "app",
                                                  "image": "registry.example.com/app:1"}]}})

    def kubeconfig_for(self, user, token_file=None):
        if user == "admin":
            return write_kubeconfig(self.dir / "admin.kubeconfig", self.plane.url,
                                    self.plane.ca, "admin", token=self.plane.admin_token,
                                    namespace=self.namespace)
        token = self.tokens.get(user) or self.add_user(user)
        return write_kubeconfig(self.dir / f"{user}.kubeconfig", self.proxy(user).url,
                                self.plane.ca, user, token=token, token_file=token_file,
                                namespace=self.namespace)

    # ---- proxies and faults ----------------------------------------------------------------
    def proxy(self, user):
        if user not in self.proxies:
            target = self.routes.get(user, "apiserver")
            self.proxies[user] = TcpProxy(self.plane.ports[target], name=user)
        return self.proxies[user]

    def route(self, user, component):
        """Sends `user`'s connections to that kube-apiserver (new ones; open ones stay)."""
        self.routes[user] = component
        if user in self.proxies:
            self.proxies[user].retarget(self.plane.ports[component])

    def users_on(self, component):
        return [u for u in self.proxies if self.routes.get(u, "apiserver") == component]

    def partition(self, user):
        self.proxy(user).partition()

    def heal(self, user):
        self.proxy(user).heal()

    def cut_watches(self, user=None):
        """Resets every connection of `user` (or of every user): the proxy cannot tell a watch
        from a renewal inside TLS, so this also drops whatever else was open."""
        for u in ([user] if user else list(self.proxies)):
            self.proxy(u).reset()

    def set_latency(self, user, seconds, direction="up"):
        self.proxy(user).set_latency(seconds, direction)

    def control(self, method, path, body=None):
        raise Failure(f"control {method} {path}: the real kube-apiserver has no control port "
                      "(HTTP-level faults need the test API server)")

    # ---- what the server saw ---------------------------------------------------------------
    def reset_counters(self):
        self.counter_offset = self.plane.audit.size()

    def counters(self, by_resource=False):
        return AuditLog.counters_of(self.plane.audit.events(self.counter_offset), by_resource)

    def sidecar_events(self, since=None):
        """Audit events of this namespace's ServiceAccounts since this env started."""
        prefix = f"system:serviceaccount:{self.namespace}:"
        return [e for e in self.plane.audit.events(self.audit_start if since is None else since)
                if e.get("user", {}).get("username", "").startswith(prefix)]

    def forbidden(self, include_starting=False):
        """403s of this namespace's ServiceAccounts. Unless include_starting, without those
        from a kube-apiserver that was (re)starting (see _unsynced), which starting_forbidden()
        lists."""
        out = [e for e in self.sidecar_events()
               if e.get("responseStatus", {}).get("code") == 403]
        return out if include_starting else [e for e in out if not self._unsynced(e)]

    def starting_forbidden(self):
        return [e for e in self.forbidden(include_starting=True) if self._unsynced(e)]

    def _unsynced(self, e):
        """Refused by a kube-apiserver that was (re)starting: it serves before its RBAC
        informers have synced, and meanwhile finds no binding (no reason given) or a binding
        without its Role ("... not found"). The same requests recur outside those windows, so a
        rule the chart lacks is still caught."""
        user = e["user"]["username"].rsplit(":", 1)[-1]
        t = epoch(e["requestReceivedTimestamp"])
        return self.plane.was_starting(self.routes.get(user, "apiserver"), t)

    @staticmethod
    def describe_event(e):
        ref = e.get("objectRef", {})
        return (f"{e['user']['username']} {e['verb']} {ref.get('resource')}"
                f"{'/' + ref['name'] if ref.get('name') else ''} -> "
                f"{e.get('responseStatus', {}).get('code')} ({e.get('requestURI')})")

    def kubectl(self, *args, check_rc=True):
        r = subprocess.run(["kubectl", "--kubeconfig", str(self.plane.admin_kubeconfig),
                            "--cache-dir", str(self.dir / "kubecache"), *args],
                           capture_output=True, text=True, timeout=30)
        if check_rc:
            check(r.returncode == 0, f"kubectl {' '.join(args)} failed: {r.stderr}")
        return r.stdout

    def lease(self, name="demo"):
        return self.plane.api(
            "GET", f"/apis/coordination.k8s.io/v1/namespaces/{self.namespace}/leases/{name}")[1]
