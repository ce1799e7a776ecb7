#!/usr/bin/env python3
"""Replay the golden wire captures in this directory against a kube-apiserver (or a stand-in) and compare.

Python 3.11 standard library only.  See the 'Replaying' section of README.md for usage and rules.
The placeholder rules live here twice, as matchers (compare: golden -> actual) and as the normaliser
(normalise: a real response -> golden text) that capture.py uses, so both sides cannot drift apart.

Why ~900 lines in one file: it is the one copy of everything a capture means (the case table, the
setups, the placeholder rules as matcher and normaliser, the watch handling), which capture.py
imports rather than repeats; the parts change together whenever a capture's rules change.
"""
import argparse
import fnmatch
import glob
import http.client
import json
import os
import re
import secrets
import ssl
import sys
import threading
import time
import urllib.parse
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
UA = "leasehold/golden"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/golden/leases"

# ----------------------------------------------------------------------------------------------- case table
# tags: cases needing things a stand-in may not model; skipped unless enabled with --with TAG.
TAGS = {
    "rbac": "needs --sa-token of SA <ns>/elector bound to the Role in README (resourceNames: [lease-a])",
    "anonymous": "needs anonymous auth (no Authorization header -> 403 for system:anonymous)",
    "pods": "needs Pods with the ServiceAccount admission plugin and ServiceAccount <ns>/default",
    "openapi": "needs /openapi/v2 and /openapi/v3 as served by kube-apiserver",
    "fresh": "needs a fresh cluster whose watch cache still holds resourceVersion 1",
    "compaction": "needs etcd compaction: give --etcd http://HOST:PORT of the server's etcd (real servers only)",
    "overload": "needs the server to reject this PUT for max-in-flight (a real server restarted with "
                "--max-mutating-requests-inflight=1 and a held slot; the test server: a 429 fault rule); not in 'all'",
    "restart": "needs an apiserver restart between writes and the watch; not replayable",
}
FILE_TAGS = {
    "lease-get-no-token-anonymous-403": "anonymous",
    "lease-put-429-overload": "overload",
    "watch-too-old-rv-410": "restart",
    "lease-list-compacted-rv-exact-410": "compaction",
    "watch-after-etcd-compaction-from-cache": "compaction",
    "watch-old-rv-replay-from-cache": "fresh",
    "openapi-v2": "openapi",
    "openapi-v3": "openapi",
}
# names that are NOT renamed (invalid/too long names that are never created; SA names; RBAC resourceNames)
KEEP_NAMES = {"Bad_Name", "missing-sa", "default", "elector"}
# object names in the captures that get a fresh unique name per case (non-rbac cases)
RENAME = ["lease-a", "lease-b", "lease-new", "lease-new2", "lease-rv", "dur-0", "dur-neg", "spec-empty",
          "holder-empty", "cle", "unk", "wt", "mt-0", "mt-3", "mt-9", "mt-bad", "mt-nozone", "mt-off", "tr-neg",
          "broken", "app-0", "app-nosa", "nope"]

# Preconditions: 'pre' = golden files whose REQUESTS are replayed first (same fresh names; placeholders filled from the
# live object), 'mod' = (name, spec changes) PUTs applied after pre; 'stale' = after filling the request, update
# the object once so the request's resourceVersion is stale.
SETUP = {
    "lease-create-409-alreadyexists": {"pre": ["lease-create-201"]},
    "lease-delete-200": {"pre": ["lease-put-missing-no-rv"]},
    "lease-get-200": {"pre": ["lease-create-201"]},
    "lease-get-after-noop": {"pre": ["lease-create-201", "lease-put-200", "lease-put-noop-200"]},
    "lease-get-table": {"pre": ["lease-create-201"]},
    "lease-list-fieldselector-200": {"pre": ["lease-create-201"]},
    "lease-list-table-simple-accept": {"pre": ["lease-create-201"]},
    "lease-list-table": {"pre": ["lease-strategy-preferredholder", "lease-holder-empty", "rbac-sa-create-lease-b-201",
                                 "lease-put-missing-with-rv", "lease-microtime-offset", "lease-empty-spec",
                                 "lease-unknown-field", "lease-create-201"],
                         "mod_first": [("mt-off", {"holderIdentity": "other"})], "rows_only_own": True},
    "lease-patch-merge-200": {"pre": ["lease-create-201"], "mod": [("lease-a", {"renewTime": "2026-01-02T03:04:06.000000Z"})]},
    "lease-put-200": {"pre": ["lease-create-201"]},
    "lease-put-409-conflict": {"pre": ["lease-create-201"], "stale": True},
    "lease-put-content-type-merge-patch-415": {"pre": ["lease-create-201"]},
    "lease-put-content-type-text-415": {"pre": ["lease-create-201"]},
    "lease-put-content-type-missing": {"pre": ["lease-create-201", "lease-put-200"]},
    "lease-put-yaml": {"pre": ["lease-create-201", "lease-put-200"]},
    "lease-put-noop-200": {"pre": ["lease-create-201", "lease-put-200"]},
    "lease-put-no-rv-existing": {"pre": ["lease-create-201"]},
    "lease-put-name-mismatch-400": {"pre": ["lease-create-201"]},
    "events-list-involvedobject-fieldselector": {"pre": ["event-core-create-201", "event-core-minimal-201",
                                                         "event-eventsv1-create-201", "event-eventsv1-no-note-201"]},
    "pod-patch-bad-json-400": {"pre": ["pod-create-201"]},
    "pod-patch-invalid-label-422": {"pre": ["pod-create-201"]},
    "pod-patch-json-415": {"pre": ["pod-create-201"]},
    "pod-patch-text-415": {"pre": ["pod-create-201"]},
    "pod-patch-labels-merge-200": {"pre": ["pod-create-201"]},
    "pod-patch-strategic-200": {"pre": ["pod-create-201"]},
    "pod-patch-labels-null-200": {"pre": ["pod-create-201", "pod-patch-labels-merge-200"]},
    "pod-patch-jsonpatch-200": {"pre": ["pod-create-201", "pod-patch-strategic-200"]},
    "rbac-sa-get-200": {"pre": ["rbac-sa-create-lease-a-201"]},
    "rbac-sa-update-200": {"pre": ["rbac-sa-create-lease-a-201"]},
    "rbac-sa-list-fieldselector-200": {"pre": ["rbac-sa-create-lease-a-201", "rbac-sa-update-200"]},
    "rbac-sa-watch-fieldselector-200": {"pre": ["rbac-sa-create-lease-a-201", "rbac-sa-update-200"]},
    "watch-no-rv-synthetic-added": {"pre": ["lease-microtime-offset"], "mod": [("mt-off", {"holderIdentity": "other"})]},
}
TRIMMED = {
    # file -> how the actual body is cut down before comparing
    "discovery-api-v1-trimmed": "keep only envelope + resources[] entries whose name is in the golden body",
    "openapi-v2": "golden keeps the first 400 bytes: actual body must start with them",
}

PH_RE = re.compile(r"<(RV\d+|UID\d+|TIME|AGE|RAND5|CONTINUE|LEN)>")
HOSTPORT = "<HOSTPORT>"  # the capture server's host:port (in /api); stands for the tested server's
PH_PAT = {
    "RV": r"(\d+)", "UID": r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})",
    "TIME": r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "AGE": r".*", "RAND5": r"([a-z0-9]{5})", "CONTINUE": r".*",
    "LEN": r"\d+",
}


def collapse_bookmarks(evs):
    """Bookmark timing is not deterministic (a real server sends one or several before the deadline, their RVs
    following its own writes elsewhere): consecutive BOOKMARKs that differ only in resourceVersion count as one
    (the last)."""
    def shape(e):
        o = json.loads(json.dumps(e))
        o.get("object", {}).get("metadata", {}).pop("resourceVersion", None)
        return o
    out = []
    for e in evs:
        if out and e.get("type") == "BOOKMARK" and out[-1].get("type") == "BOOKMARK" and shape(e) == shape(out[-1]):
            out[-1] = e
            continue
        out.append(e)
    return out


def quiet_bookmarks(evs, since):
    """Which events of a watch stream a server without writes of its own would have sent too: one flag per event.
    kube-apiserver renews its kube-system Leases every few seconds, so on a real server the Lease resource always
    moves on and a watch with allowWatchBookmarks gets bookmarks before its deadline. Without those writes (the
    world of a test server) a regular bookmark is due only once an event of the stream has moved the resource past
    the watch's resourceVersion (`since`; for a watch without one, the RV of the initial-events-end bookmark) or
    past the last bookmark. capture.py leaves the others out of the captures, --real out of a real server's stream."""
    flags, last = [], None
    for ev in evs:
        md = ev.get("object", {}).get("metadata", {}) if isinstance(ev.get("object"), dict) else {}
        rv = int(md.get("resourceVersion") or 0) if str(md.get("resourceVersion") or "0").isdigit() else 0
        keep = True
        if ev.get("type") == "BOOKMARK":
            if "k8s.io/initial-events-end" in (md.get("annotations") or {}) or since is None:
                since = rv
            elif last is None or last <= since:
                keep = False
            else:
                since = rv
        elif ev.get("type") != "ERROR":
            last = max(last or 0, rv)
        flags.append(keep)
    return flags


class CaseFail(Exception):
    pass


class Skip(Exception):
    pass


# ----------------------------------------------------------------------------------------------- golden parsing
def parse_golden(path):
    raw = open(path, encoding="utf-8", newline="").read()
    comments = [ln[2:] for ln in raw.split("\n>>> REQUEST\n", 1)[0].splitlines() if ln.startswith("#")]
    req_txt = raw.split(">>> REQUEST\n", 1)[1].split("<<< RESPONSE\n", 1)[0]
    resp_txt = raw.split("<<< RESPONSE\n", 1)[1]
    rhead, _, rbody = req_txt.partition("\n\n")
    lines = rhead.split("\n")
    method, target, _ = lines[0].split(" ", 2)
    headers = []
    for ln in lines[1:]:
        if ln:
            k, _, v = ln.partition(":")
            headers.append((k.strip(), v.strip()))
    if rbody.endswith("\n"):
        rbody = rbody[:-1]
    shead, _, sbody = resp_txt.partition("\n\n")
    slines = shead.split("\n")
    code = int(slines[0].split(" ")[1])
    sheaders = {}
    for ln in slines[1:]:
        k, _, v = ln.partition(":")
        sheaders[k.strip().lower()] = v.strip()
    name = os.path.basename(path)[:-5]
    return {"name": name, "comments": comments, "method": method, "target": target, "headers": headers,
            "body": rbody, "code": code, "rheaders": sheaders, "rbody": sbody}


def is_watch(g):
    return "watch=true" in g["target"]


def watch_events(body):
    """Events of a watch body, from curl --raw chunk framing or decoded: every line that is a JSON object."""
    out = []
    for ln in body.replace("\r\n", "\n").split("\n"):
        ln = ln.strip()
        if ln.startswith("{"):
            out.append(json.loads(ln))
    return out


# ----------------------------------------------------------------------------------------------- comparison
class Binder:
    """Placeholder bindings for one case: <RVn>/<UIDn> must stay consistent and distinct numbers distinct."""

    def __init__(self):
        self.vals = {}

    def bind(self, ph, val, where):
        if ph in self.vals:
            if self.vals[ph] != val:
                raise CaseFail("%s: <%s> expected %r (bound earlier), actual %r" % (where, ph, self.vals[ph], val))
            return
        for k, v in self.vals.items():
            if v == val and k[:2] == ph[:2] and k != ph:
                raise CaseFail("%s: <%s> and <%s> must differ, both %r" % (where, ph, k, val))
        self.vals[ph] = val


def match_string(exp, act, binder, where):
    if not PH_RE.search(exp):
        if exp != act and (len(exp) > 120 or len(act) > 120):
            i = next((i for i, (x, y) in enumerate(zip(exp, act)) if x != y), min(len(exp), len(act)))
            raise CaseFail("%s: strings differ at char %d: expected ...%s, actual ...%s" % (
                where, i, json.dumps(exp[max(0, i - 20):i + 100]), json.dumps(act[max(0, i - 20):i + 100])))
        if exp != act:
            raise CaseFail("%s: expected %s, actual %s" % (where, json.dumps(exp)[:300], json.dumps(act)[:300]))
        return
    pat, names = "", []
    pos = 0
    for m in PH_RE.finditer(exp):
        pat += re.escape(exp[pos:m.start()])
        ph = m.group(1)
        kind = ph if ph in PH_PAT else re.match(r"[A-Z]+", ph).group(0)
        p = PH_PAT[kind]
        if p.startswith("("):
            names.append(ph)
        pat += p
        pos = m.end()
    pat += re.escape(exp[pos:])
    mm = re.fullmatch(pat, act, re.S)
    if not mm:
        raise CaseFail("%s: expected %s, actual %s" % (where, json.dumps(exp)[:300], json.dumps(act)[:300]))
    for ph, val in zip(names, mm.groups()):
        binder.bind(ph, val, where)


LOOSE_TEXT = False  # --loose-text: free-text fields need only be present strings
LOOSE_KEYS = (".message", ".description")


def jcompare(exp, act, binder, where="$"):
    if isinstance(exp, dict):
        if not isinstance(act, dict):
            raise CaseFail("%s: expected object, actual %s" % (where, json.dumps(act)[:200]))
        for k in exp:
            if k not in act:
                raise CaseFail("%s.%s: expected %s, actual <absent>" % (where, k, json.dumps(exp[k])[:200]))
            jcompare(exp[k], act[k], binder, "%s.%s" % (where, k))
        for k in act:
            if k not in exp:
                raise CaseFail("%s.%s: expected <absent>, actual %s" % (where, k, json.dumps(act[k])[:200]))
    elif isinstance(exp, list):
        if not isinstance(act, list):
            raise CaseFail("%s: expected array, actual %s" % (where, json.dumps(act)[:200]))
        for i in range(min(len(exp), len(act))):
            jcompare(exp[i], act[i], binder, "%s[%d]" % (where, i))
        if len(exp) != len(act):
            raise CaseFail("%s: expected %d elements, actual %d" % (where, len(exp), len(act)))
    elif isinstance(exp, str):
        if not isinstance(act, str):
            raise CaseFail("%s: expected %s, actual %s" % (where, json.dumps(exp)[:200], json.dumps(act)[:200]))
        if LOOSE_TEXT and where.endswith(LOOSE_KEYS):
            return
        match_string(exp, act, binder, where)
    else:
        if type(exp) != type(act) or exp != act:  # noqa: E721  (1 vs 1.0 vs True differ on the wire)
            raise CaseFail("%s: expected %s, actual %s" % (where, json.dumps(exp), json.dumps(act)[:200]))


def media(ct):
    if ct is None:
        return None
    parts = [p.strip() for p in ct.split(";")]
    return (parts[0].lower(), frozenset(p.replace(" ", "").lower() for p in parts[1:] if p))


# ----------------------------------------------------------------------------------------------- normaliser
# The placeholder rules of README.md, applied to a real response (capture.py). Kept beside the matchers above.
RV_RE = re.compile(r'("resourceVersion":")(\d+)(")|(resourceVersion=)(\d+)()'
                   r'|(too old resource version: )(\d+) \((\d+)\)')
UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
SERVER_TIME_RE = re.compile(r'"(creationTimestamp|deletionTimestamp|time)":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"')
RAND5_RE = re.compile(r"kube-api-access-[a-z0-9]{5}(?![a-z0-9])")
JSTR = r'"(?:[^"\\]|\\.)*"'


class Numberer:
    """<RVn>/<UIDn> for raw values: seeded with the request's bindings (placeholder -> value sent), new values get
    the lowest free number in order of first appearance, so equal values share a placeholder and different ones never do."""

    def __init__(self, kind, binds):
        self.kind = kind
        self.by_val = {v: k for k, v in sorted(binds.items()) if k.startswith(kind) and k[len(kind):].isdigit()}
        self.used = {int(k[len(kind):]) for k in self.by_val.values()}

    def __call__(self, val):
        if val not in self.by_val:
            n = 1
            while n in self.used:
                n += 1
            self.used.add(n)
            self.by_val[val] = "%s%d" % (self.kind, n)
        return "<%s>" % self.by_val[val]


def table_ages(text):
    """<AGE> for the Age cell of every Table row (the column named Age; the cells before it are strings)."""
    try:
        j = json.loads(text)
    except ValueError:
        return text
    if not isinstance(j, dict) or j.get("kind") != "Table":
        return text
    names = [c.get("name") for c in j.get("columnDefinitions", [])]
    if "Age" not in names:
        return text
    k = names.index("Age")
    cells = re.compile(r'("cells":\[(?:%s,){%d})%s' % (JSTR, k, JSTR))
    out, n = cells.subn(lambda m: m.group(1) + '"<AGE>"', text)
    if n != len(j.get("rows", [])):
        raise ValueError("Table: replaced %d Age cells for %d rows" % (n, len(j.get("rows", []))))
    return out


def normalise(text, binds=None, hostport=None, secrets_=()):
    """A real response body (or watch stream) -> golden text: <RVn>, <UIDn>, <TIME>, <AGE>, <RAND5>, <HOSTPORT>;
    secrets_ = (value, placeholder) pairs such as (admin token, '<ADMIN-TOKEN>') never reach a file."""
    binds = binds or {}
    for val, ph in secrets_:
        if val:
            text = text.replace(val, ph)
    rv, uid = Numberer("RV", binds), Numberer("UID", binds)

    def rv_sub(m):
        if m.group(1) is not None:
            return m.group(1) + rv(m.group(2)) + m.group(3)
        if m.group(4) is not None:
            return m.group(4) + rv(m.group(5))
        a = rv(m.group(8))
        return m.group(7) + a + " (" + rv(m.group(9)) + ")"
    text = RV_RE.sub(rv_sub, text)
    text = UUID_RE.sub(lambda m: uid(m.group(0)), text)
    text = SERVER_TIME_RE.sub(lambda m: '"%s":"<TIME>"' % m.group(1), text)
    text = RAND5_RE.sub("kube-api-access-<RAND5>", text)
    if hostport:
        text = text.replace(hostport, HOSTPORT)
    if "\n" not in text.rstrip("\n"):  # one JSON document (watch streams hold no Tables)
        text = table_ages(text)
    return text


# ----------------------------------------------------------------------------------------------- HTTP
class Client:
    def __init__(self, server, ca, timeout=15):
        u = urllib.parse.urlsplit(server)
        self.host, self.port = u.hostname, u.port or 443
        self.ctx = ssl.create_default_context(cafile=ca) if ca else ssl._create_unverified_context()
        self.timeout = timeout

    def request(self, method, path, headers, body=None, stream=False, timeout=None):
        c = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=timeout or self.timeout)
        c.putrequest(method, path, skip_accept_encoding=True)
        for k, v in headers:
            c.putheader(k, v)
        data = body.encode() if isinstance(body, str) else body
        if data is not None and method in ("POST", "PUT", "PATCH"):
            c.putheader("Content-Length", str(len(data)))
        c.endheaders()
        if data is not None and method in ("POST", "PUT", "PATCH"):
            c.send(data)
        r = c.getresponse()
        if stream:
            return c, r
        b = r.read()
        c.close()
        self.last = r  # status line and headers in wire order, for capture.py
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), b

    def admin(self, token, method, path, obj=None, ctype="application/json"):
        h = [("Authorization", "Bearer " + token), ("Accept", "application/json"), ("User-Agent", UA)]
        body = None
        if obj is not None:
            h.append(("Content-Type", ctype))
            body = json.dumps(obj, separators=(",", ":"))
        st, _, b = self.request(method, path, h, body)
        try:
            j = json.loads(b)
        except ValueError:
            j = None
        return st, j


# ----------------------------------------------------------------------------------------------- runner
class Runner:
    def __init__(self, args):
        self.a = args
        self.cl = Client(args.server, args.ca)
        self.ns = args.namespace
        self.goldens = {}
        for p in sorted(glob.glob(os.path.join(args.golden or HERE, "*.http"))):
            g = parse_golden(p)
            self.goldens[g["name"]] = g
        u = urllib.parse.urlsplit(args.server)
        self.hostport = "%s:%d" % (u.hostname, u.port or 443)

    # --- names / text mapping
    def new_case_ctx(self, g):
        rbac = g["name"].startswith("rbac-")
        prefix = "rp%s-" % secrets.token_hex(3)
        names = {} if rbac else {n: prefix + n for n in RENAME}
        return {"names": names, "rbac": rbac, "gen": {}, "created": [], "binder": Binder()}

    def map_text(self, text, ctx):
        if self.ns != "golden":
            text = re.sub(r"(?<![A-Za-z0-9-])golden(?![A-Za-z0-9-])", self.ns, text)
        for old, new in ctx["names"].items():
            text = re.sub(r"(?:(?<=%%3D)|(?<=%%2C)|(?<![A-Za-z0-9_%%-]))%s(?![A-Za-z0-9_-])" % re.escape(old), new, text)
        return text

    def name(self, ctx, n):
        return ctx["names"].get(n, n)

    def token_header(self, v, admin_only=False):
        if admin_only:
            v = v.replace("<SA-TOKEN>", "<ADMIN-TOKEN>")
        v = v.replace("<ADMIN-TOKEN>", self.a.token)
        if "<SA-TOKEN>" in v:
            if not self.a.sa_token:
                raise Skip("needs --sa-token")
            v = v.replace("<SA-TOKEN>", self.a.sa_token)
        return v

    # --- placeholders in requests
    def gen_value(self, ph, ctx):
        if ph not in ctx["gen"]:
            if ph.startswith("RV"):
                ctx["gen"][ph] = str(12345 + int(ph[2:]) - 1)
            elif ph.startswith("UID"):
                ctx["gen"][ph] = str(uuid.uuid4())
            else:
                ctx["gen"][ph] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        return ctx["gen"][ph]

    def fill_json(self, node, live, ctx, binds):
        if isinstance(node, dict):
            return {k: self.fill_json(v, (live or {}).get(k) if isinstance(live, dict) else None, ctx, binds)
                    for k, v in node.items()}
        if isinstance(node, list):
            return [self.fill_json(v, live[i] if isinstance(live, list) and i < len(live) else None, ctx, binds)
                    for i, v in enumerate(node)]
        if isinstance(node, str) and PH_RE.fullmatch(node):
            ph = node[1:-1]
            if isinstance(live, str):
                val = live
            elif ph in binds:
                val = binds[ph]
            else:
                val = self.gen_value(ph, ctx)
            if ph[:2] in ("RV", "UI"):
                binds.setdefault(ph, val)
            return val
        return node

    def build_request(self, g, ctx, binds, admin_only=False):
        """-> (method, path, headers, body, binds) with names mapped and placeholders filled."""
        target = self.map_text(g["target"], ctx)
        body = self.map_text(g["body"], ctx) if g["body"] else None
        headers = []
        ctype_present = False
        for k, v in g["headers"]:
            if k.lower() == "authorization":
                headers.append((k, self.token_header(v, admin_only)))
            elif k.lower() == "content-type":
                ctype_present = True
                if v:  # an empty 'Content-Type:' line in a capture means: no header sent
                    headers.append((k, v))
            else:
                headers.append((k, v))
        headers.append(("User-Agent", UA))
        if body is not None and PH_RE.search(body):
            live = None
            if g["method"] in ("PUT", "PATCH", "DELETE"):
                st, live = self.cl.admin(self.a.token, "GET", target.split("?")[0])
                if st != 200:
                    live = None
            try:
                obj = json.loads(body)
                body = json.dumps(self.fill_json(obj, live, ctx, binds), separators=(",", ":"), ensure_ascii=False)
            except ValueError:
                pass
        # URL (and non-JSON body) placeholders: from bindings, else generated
        def sub(m):
            ph = m.group(1)
            v = binds.get(ph) or self.gen_value(ph, ctx)
            binds.setdefault(ph, v)
            return v
        target = PH_RE.sub(sub, target)
        if body is not None:
            body = PH_RE.sub(sub, body)
        if not ctype_present and body == "":
            body = None
        return g["method"], target, headers, body

    def track(self, method, path, status, body, ctx):
        if status not in (200, 201) or method not in ("POST", "PUT"):
            return
        try:
            j = json.loads(body)
            n = j["metadata"]["name"]
        except Exception:
            return
        base = path.split("?")[0]
        url = base + "/" + n if method == "POST" else base
        if url not in ctx["created"]:
            ctx["created"].append(url)

    def send(self, g, ctx, binds, check_2xx=False):
        m, path, h, body = self.build_request(g, ctx, binds, admin_only=not ctx["rbac"])
        st, hd, b = self.cl.request(m, path, h, body)
        self.track(m, path, st, b, ctx)
        if check_2xx and not 200 <= st < 300:
            raise CaseFail("setup %s: %s %s -> %d %s" % (g["name"], m, path, st, b[:200]))
        return st, hd, b

    def mod(self, ctx, name, changes):
        path = self.map_text(LEASES, ctx) + "/" + self.name(ctx, name)
        st, obj = self.cl.admin(self.a.token, "GET", path)
        if st != 200:
            raise CaseFail("setup: GET %s -> %d" % (path, st))
        obj["spec"].update(changes)
        st, j = self.cl.admin(self.a.token, "PUT", path, obj)
        if st != 200:
            raise CaseFail("setup: PUT %s -> %d %s" % (path, st, j))
        return j

    def list_rv(self, ctx, name):
        st, j = self.cl.admin(self.a.token, "GET", self.map_text(LEASES, ctx) + "?fieldSelector=metadata.name%3D"
                              + self.name(ctx, name))
        return j["metadata"]["resourceVersion"]

    def cleanup(self, ctx):
        for url in reversed(ctx["created"]):
            q = "?gracePeriodSeconds=0" if "/pods/" in url else ""
            try:
                self.cl.admin(self.a.token, "DELETE", url + q)
            except Exception:
                pass

    def rbac_reset(self, ctx):
        for n in ("lease-a", "lease-b"):
            self.cl.admin(self.a.token, "DELETE", self.map_text(LEASES, ctx) + "/" + n)

    # --- one case
    def skip_reason(self, g):
        tag = FILE_TAGS.get(g["name"])
        if g["name"].startswith("rbac-"):
            tag = "rbac"
        elif g["name"].startswith("pod-"):
            tag = "pods"
        if tag and tag not in self.a.with_tags:
            return "tag %s: %s (enable with --with %s)" % (tag, TAGS[tag], tag)
        if tag == "rbac" and not self.a.sa_token:
            return "tag rbac enabled but no --sa-token given"
        if tag == "compaction" and not self.a.etcd:
            return "tag compaction enabled but no --etcd given"
        if tag == "restart":
            return "tag %s: %s" % (tag, TAGS[tag])
        return None

    def run_case(self, g):
        ctx = self.new_case_ctx(g)
        try:
            if ctx["rbac"]:
                self.rbac_reset(ctx)
            return self._run_case(g, ctx)
        finally:
            self.cleanup(ctx)
            if ctx["rbac"]:
                self.rbac_reset(ctx)

    def _run_case(self, g, ctx):
        s = SETUP.get(g["name"], {})
        for pre in s.get("pre", []):
            self.send(self.goldens[pre], ctx, {}, check_2xx=True)
            if pre == "lease-microtime-offset":
                for n, ch in s.get("mod_first", []):
                    self.mod(ctx, n, ch)
        for n, ch in s.get("mod", []):
            self.mod(ctx, n, ch)
        if g["name"] in WATCH_SCRIPTS:
            return WATCH_SCRIPTS[g["name"]](self, g, ctx)
        binds = {}
        m, path, h, body = self.build_request(g, ctx, binds)
        if s.get("stale"):
            self.mod(ctx, "lease-a", {"renewTime": "2026-01-02T03:04:08.000000Z"})
        if is_watch(g):
            return self.do_watch(g, ctx, binds, (m, path, h, body))
        st, hd, b = self.cl.request(m, path, h, body)
        self.track(m, path, st, b, ctx)
        return self.compare(g, ctx, binds, st, hd, b)

    def compare_head(self, g, st, hd):
        if st != g["code"]:
            raise CaseFail("status: expected %d, actual %d" % (g["code"], st))
        ect, act = g["rheaders"].get("content-type"), hd.get("content-type")
        if media(ect) != media(act):
            raise CaseFail("Content-Type: expected %r, actual %r" % (ect, act))
        if "retry-after" in g["rheaders"] and g["rheaders"]["retry-after"] != hd.get("retry-after"):
            raise CaseFail("Retry-After: expected %r, actual %r" % (g["rheaders"]["retry-after"], hd.get("retry-after")))
        if g["rheaders"].get("warning") != hd.get("warning"):
            raise CaseFail("Warning: expected %r, actual %r" % (g["rheaders"].get("warning"), hd.get("warning")))

    def expected_text(self, g, ctx):
        t = self.map_text(g["rbody"], ctx)
        return t.replace(HOSTPORT, self.hostport)  # capture server's address -> this server's

    def compare(self, g, ctx, binds, st, hd, b):
        self.compare_head(g, st, hd)
        binder = ctx["binder"]
        for k, v in binds.items():
            binder.bind(k, v, "request")
        exp_t = self.expected_text(g, ctx)
        act_t = b.decode("utf-8", "replace")
        if g["name"] == "openapi-v2":
            prefix = exp_t.split("\n...<TRUNCATED")[0]
            if not act_t.startswith(prefix):
                i = next((i for i, (x, y) in enumerate(zip(prefix, act_t)) if x != y), min(len(prefix), len(act_t)))
                raise CaseFail("body byte %d: expected %r, actual %r" % (i, prefix[i:i + 40], act_t[i:i + 40]))
            return "first %d bytes" % len(prefix)
        try:
            exp = json.loads(exp_t)
        except ValueError:
            exp = None
        if exp is None:  # plain text body
            if exp_t.rstrip("\n") != act_t.rstrip("\n"):
                raise CaseFail("body: expected %r, actual %r" % (exp_t[:200], act_t[:200]))
            return "text"
        try:
            act = json.loads(act_t)
        except ValueError:
            raise CaseFail("body: expected JSON, actual %r" % act_t[:200])
        if g["name"] == "discovery-api-v1-trimmed" and isinstance(act.get("resources"), list):
            keep = {r["name"] for r in exp["resources"]}
            act["resources"] = [r for r in act["resources"] if r.get("name") in keep]
        if SETUP.get(g["name"], {}).get("rows_only_own") and isinstance(act.get("rows"), list):
            own = set(ctx["names"].values())
            act["rows"] = [r for r in act["rows"] if r.get("object", {}).get("metadata", {}).get("name") in own]
        jcompare(exp, act, binder)
        return ""

    # --- watches
    def open_watch(self, g, req, limit):
        m, path, h, body = req
        c, r = self.cl.request(m, path, h, body, stream=True, timeout=limit)
        return c, r

    def read_watch(self, c, r, limit):
        evs, raw = [], b""
        deadline = time.monotonic() + limit
        try:
            while time.monotonic() < deadline:
                ln = r.readline()
                if not ln:
                    break
                raw += ln
                if ln.strip():
                    evs.append(json.loads(ln))
        finally:
            c.close()
        return evs, raw

    def compare_watch(self, g, ctx, binds, r, evs, raw_if_not_200=None):
        hd = dict((k.lower(), v) for k, v in r.getheaders())
        self.compare_head(g, r.status, hd)
        binder = ctx["binder"]
        for k, v in binds.items():
            binder.bind(k, v, "request")
        exp_t = self.expected_text(g, ctx)
        if r.status != 200:
            jcompare(json.loads(exp_t), json.loads(raw_if_not_200), binder)
            return ""
        exp = collapse_bookmarks(watch_events(exp_t))
        if self.a.real:
            m = re.search(r"resourceVersion=<(RV\d+)>", g["target"])
            since = int(binds[m.group(1)]) if m and binds.get(m.group(1), "").isdigit() else None
            evs = [e for e, keep in zip(evs, quiet_bookmarks(evs, since)) if keep]
        evs = collapse_bookmarks(evs)
        seen = max([int(v) for k, v in binds.items() if k.startswith("RV") and v.isdigit()] or [0])
        for i in range(min(len(exp), len(evs))):
            exp_i = exp[i]
            if exp_i.get("type") == "BOOKMARK" and evs[i].get("type") == "BOOKMARK":
                # A bookmark carries the watch cache's latest RV for the whole resource (on the real server moved
                # by its own kube-system Leases every few seconds): any RV not older than the stream so far.
                rv = evs[i].get("object", {}).get("metadata", {}).get("resourceVersion", "")
                if not (isinstance(rv, str) and rv.isdigit() and int(rv) >= seen):
                    raise CaseFail("event[%d]: BOOKMARK resourceVersion %r older than the stream's %d" % (i, rv, seen))
                exp_i = json.loads(json.dumps(exp_i))
                exp_i["object"]["metadata"]["resourceVersion"] = rv
            jcompare(exp_i, evs[i], binder, "event[%d]" % i)
            rv = evs[i].get("object", {}).get("metadata", {}).get("resourceVersion", "")
            if evs[i].get("type") != "ERROR" and isinstance(rv, str) and rv.isdigit():
                seen = max(seen, int(rv))
        if len(exp) != len(evs):
            raise CaseFail("events: expected %d %s, actual %d %s" % (len(exp), [e["type"] for e in exp], len(evs),
                                                                    [e.get("type") for e in evs]))
        return "%d events" % len(evs)

    def do_watch(self, g, ctx, binds, req, during=None):
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(req[1]).query)
        tmo = int(q.get("timeoutSeconds", ["5"])[0])
        c, r = self.open_watch(g, req, tmo + 10)
        if r.status != 200:
            b = r.read()
            c.close()
            return self.compare_watch(g, ctx, binds, r, [], b)
        th = None
        if during:
            th = threading.Thread(target=during, daemon=True)
            th.start()
        evs, _ = self.read_watch(c, r, tmo + 10)
        if th:
            th.join(10)
        return self.compare_watch(g, ctx, binds, r, evs)

    def etcd_compact(self):
        """Compact the server's etcd at its current revision (etcd v3 JSON gateway)."""
        u = urllib.parse.urlsplit(self.a.etcd)
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
        c.request("POST", "/v3/kv/range", json.dumps({"key": "AA=="}))
        rev = int(json.loads(c.getresponse().read())["header"]["revision"])
        c.request("POST", "/v3/kv/compaction", json.dumps({"revision": rev, "physical": True}))
        c.getresponse().read()
        c.close()
        return rev

    # --- main loop
    def run(self):
        sel = []
        for n, g in self.goldens.items():
            if self.a.only and not any(fnmatch.fnmatch(n, p) for p in self.a.only):
                continue
            if self.a.skip and any(fnmatch.fnmatch(n, p) for p in self.a.skip):
                continue
            sel.append(g)
        # the 'fresh' case must run first (before the watch cache window moves on)
        sel.sort(key=lambda g: 0 if FILE_TAGS.get(g["name"]) == "fresh" else 1)
        results = []
        for g in sel:
            why = self.skip_reason(g)
            if self.a.list:
                print("%-50s %s" % (g["name"], ("[skip: %s]" % why) if why else ""))
                continue
            if why:
                res, detail = "SKIP", why
            else:
                t0 = time.monotonic()
                try:
                    detail = self.run_case(g) or ""
                    res = "PASS"
                except CaseFail as e:
                    res, detail = "FAIL", str(e)
                except Skip as e:
                    res, detail = "SKIP", str(e)
                except Exception as e:  # connection errors etc.
                    res, detail = "FAIL", "%s: %s" % (type(e).__name__, e)
                dt = time.monotonic() - t0
                if res != "SKIP":
                    detail = ("(%.1fs) " % dt) + detail
            print("%s %s  %s" % (res, g["name"], detail), flush=True)
            results.append({"name": g["name"], "result": res, "detail": detail})
        if self.a.list:
            return 0
        p = sum(r["result"] == "PASS" for r in results)
        f = sum(r["result"] == "FAIL" for r in results)
        k = sum(r["result"] == "SKIP" for r in results)
        line = "golden: %d passed, %d failed" % (p, f) + (", %d skipped" % k if k else "")
        print(line)
        if self.a.json:
            with open(self.a.json, "w") as fh:
                json.dump({"results": results, "passed": p, "failed": f, "skipped": k, "summary": line}, fh,
                          indent=1)
        return 1 if f else 0


# ----------------------------------------------------------------------------------------------- watch scripts
def w_put_noop_delete(rn, g, ctx):
    rn.send(rn.goldens["lease-create-201"], ctx, {}, check_2xx=True)
    rn.send(rn.goldens["lease-microtime-offset"], ctx, {}, check_2xx=True)
    binds = {"RV3": rn.list_rv(ctx, "lease-a")}
    req = rn.build_request(g, ctx, binds)

    def during():
        time.sleep(0.5)
        rn.mod(ctx, "lease-a", {"renewTime": "2026-01-02T03:04:20.000000Z"})   # MODIFIED
        rn.mod(ctx, "lease-a", {})                                               # no-op: no event
        rn.mod(ctx, "mt-off", {"holderIdentity": "other"})                       # filtered out
        rn.cl.admin(rn.a.token, "DELETE", rn.map_text(LEASES, ctx) + "/" + rn.name(ctx, "lease-a"))  # DELETED
    return rn.do_watch(g, ctx, binds, req, during)


def w_timeout_empty(rn, g, ctx):
    rn.send(rn.goldens["lease-microtime-offset"], ctx, {}, check_2xx=True)
    binds = {"RV1": rn.list_rv(ctx, "mt-off")}
    return rn.do_watch(g, ctx, binds, rn.build_request(g, ctx, binds))


def w_old_rv(rn, g, ctx):
    rn.send(rn.goldens["lease-microtime-offset"], ctx, {}, check_2xx=True)
    rn.mod(ctx, "mt-off", {"holderIdentity": "other"})
    binds = {"RV1": "1"}
    return rn.do_watch(g, ctx, binds, rn.build_request(g, ctx, binds))


def written_then_changed(rn, ctx, between=None):
    """Creates the mt-off Lease, changes it (calling `between` after the change, e.g. an etcd
    compaction or an apiserver restart) and returns {"RV1": the creation's resourceVersion}."""
    _, _, b = rn.send(rn.goldens["lease-microtime-offset"], ctx, {}, check_2xx=True)
    rv1 = json.loads(b)["metadata"]["resourceVersion"]
    rn.mod(ctx, "mt-off", {"holderIdentity": "other"})
    if between:
        between()
    return {"RV1": rv1}


def w_after_compaction(rn, g, ctx):
    binds = written_then_changed(rn, ctx, rn.etcd_compact)
    return rn.do_watch(g, ctx, binds, rn.build_request(g, ctx, binds))


def c_list_compacted(rn, g, ctx):
    binds = written_then_changed(rn, ctx, rn.etcd_compact)
    m, path, h, body = rn.build_request(g, ctx, binds)
    st, hd, b = rn.cl.request(m, path, h, body)
    return rn.compare(g, ctx, binds, st, hd, b)


WATCH_SCRIPTS = {
    "watch-fieldselector-put-noop-delete-timeout": w_put_noop_delete,
    "watch-timeout-empty": w_timeout_empty,
    "watch-old-rv-replay-from-cache": w_old_rv,
    "watch-after-etcd-compaction-from-cache": w_after_compaction,
    "lease-list-compacted-rv-exact-410": c_list_compacted,
}


def main(argv=None):
    ap = argparse.ArgumentParser(description="Replay golden kube-apiserver captures against a server and compare.")
    ap.add_argument("--server", required=True, help="https://HOST:PORT")
    ap.add_argument("--ca", help="CA bundle (PEM) for the server certificate; omitted: no verification")
    ap.add_argument("--token", required=True, help="bearer token with full rights (system:masters)")
    ap.add_argument("--sa-token", help="bearer token of SA <ns>/elector bound to the Role in README (tag rbac)")
    ap.add_argument("--namespace", default="golden", help="namespace the cases use (must exist; default golden)")
    ap.add_argument("--golden", help="directory of the *.http captures (default: beside this script)")
    ap.add_argument("--only", action="append", help="run only cases matching GLOB (repeatable)")
    ap.add_argument("--skip", action="append", help="skip cases matching GLOB (repeatable)")
    ap.add_argument("--with", dest="with_", default="", help="enable tags, comma-separated: " + ",".join(TAGS))
    ap.add_argument("--etcd", help="http://HOST:PORT of the server's etcd (for tag compaction)")
    ap.add_argument("--list", action="store_true", help="list cases (and why skipped), run nothing")
    ap.add_argument("--loose-text", action="store_true",
                    help="free-text fields (message, description) need only be present strings; structure, codes, "
                         "reasons, details and every other value are still compared exactly")
    ap.add_argument("--real", action="store_true",
                    help="the server is a real kube-apiserver: BOOKMARKs that only its own kube-system Lease "
                         "renewals made due are left out of its watch streams, as capture.py leaves them out")
    ap.add_argument("--json", help="write results as JSON to this file")
    a = ap.parse_args(argv)
    global LOOSE_TEXT
    LOOSE_TEXT = a.loose_text
    a.with_tags = {t.strip() for t in a.with_.split(",") if t.strip()}
    if "all" in a.with_tags:
        a.with_tags = (a.with_tags - {"all"}) | (set(TAGS) - {"overload"})
    bad = a.with_tags - set(TAGS)
    if bad:
        ap.error("unknown tag(s): %s" % ",".join(sorted(bad)))
    return Runner(a).run()


if __name__ == "__main__":
    sys.exit(main())
