#!/usr/bin/env python3
"""Capture the golden files in this directory from the real kube-apiserver (tests/realkube).

Starts the real control plane (tests/realkube/start.sh up) in a temporary directory, applies rbac.yaml
(namespace golden, ServiceAccounts default and elector, the elector Role/RoleBinding), takes a TokenRequest
token for golden/elector, then replays the REQUEST half of every capture (with the same setups, renames and
placeholder filling as replay.py) and writes the server's answers, normalised by replay.normalise, as *.http.
The two cases a client cannot set up on a running server are made here: watch-too-old-rv-410 (kube-apiserver
restarted between the writes and the watch) and lease-put-429-overload (a second control plane started with
--max-mutating-requests-inflight=1 --enable-priority-and-fairness=false, the one slot held by a half-sent POST).

Usage: capture.py [--from DIR] [--out DIR] [--only GLOB]... [--keep DIR] [--check]
  --from  where the requests come from (default: this directory, i.e. a refresh)
  --out   where the captures go (default: this directory); README.md's "Captured" line is updated there
  --check capture nothing: replay the captures against a fresh real control plane (exit 1 on a difference)
Binaries: those tests/realkube/start.sh uses (build them with tests/realkube/build.sh).
About 400 lines: the capture loop plus the two cases only a capture can set up; the case table and
the placeholder rules are replay.py's (imported), the control plane is leasehold_testing's.
Python 3.11 standard library and the tests' leasehold_testing package (PYTHONPATH=tests/lib, as ctest
sets it); kubectl and openssl on PATH, like start.sh.
"""
import argparse
import fnmatch
import json
import os
import re
import shutil
import socket
import ssl
import sys
import tempfile
import time
import urllib.parse

import replay  # this directory's: the one copy of the case table, setups and placeholder rules
from leasehold_testing import control_plane  # ControlPlane: the one wrapper of start.sh

HERE = os.path.dirname(os.path.abspath(__file__))
KEPT_HEADERS = ("content-type", "transfer-encoding", "retry-after", "content-length", "warning", "location",
                "content-encoding")
OVERLOAD_FLAGS = ["--max-mutating-requests-inflight=1", "--enable-priority-and-fairness=false"]

# Comment lines that described the v1.24 capture session and no longer fit: replaced as a whole.
COMMENTS = {
    "discovery-api-aggregated-accept": [
        "kubectl 1.32 asks for aggregated discovery first: this server answers APIGroupDiscoveryList",
        "(apidiscovery.k8s.io/v2, Content-Type with its g/v/as parameters)."],
    "discovery-apis-coordination": [
        "coordination.k8s.io/v1beta1 is listed because tests/realkube/start.sh runs kube-apiserver with",
        "--runtime-config=coordination.k8s.io/v1beta1=true (LeaseCandidate, for coordinated leader election)."],
    "openapi-v3": ["/openapi/v3 on this server: the OpenAPI v3 discovery document."],
    "openapi-v2": ["Body truncated to its first 400 bytes."],
    "lease-strategy-preferredholder": [
        "strategy and preferredHolder are kept: the CoordinatedLeaderElection feature gate is on",
        "(tests/realkube/start.sh)."],
    "lease-unknown-field": [
        "spec.bogusField is dropped and named in a Warning header (field validation Warn, the default)."],
    "lease-list-compacted-rv-exact-410": [
        "LIST at an exact resourceVersion (<RV1>) that etcd has compacted away (POST /v3/kv/compaction at the",
        "current revision right before the request): served from the watch cache's snapshot, 200 (a v1.24",
        "server went to etcd and answered 410 Expired; the file keeps its name)."],
    "watch-after-etcd-compaction-from-cache": [
        "etcd was compacted at its current revision (POST /v3/kv/compaction); then watch from resourceVersion=<RV1>",
        "(the create's RV, older than the compacted revision).",
        "The apiserver serves the watch from its watch cache, which still holds the window: no 410, events replayed."],
    "watch-old-rv-replay-from-cache": [
        "Watch from resourceVersion=1 (<RV1> below is 1) on a fresh control plane (this case runs first; the",
        "namespace, ServiceAccounts and Role were created just before): RV 1 is still inside the watch cache's",
        "window, so NO 410; the cache replays every change since (ADDED at create, then MODIFIED), both in ONE",
        "HTTP chunk, then a BOOKMARK before the deadline (its RV is the cache's latest, see README)."],
    "watch-no-rv-synthetic-added": [
        "Watch WITHOUT resourceVersion: a synthetic ADDED for the existing object, then (allowWatchBookmarks)",
        "a BOOKMARK annotated k8s.io/initial-events-end, in the same chunk; nothing more before the deadline."],
    "watch-too-old-rv-410": [
        "kube-apiserver restarted (SIGTERM, start again: its watch cache re-initialised at the current etcd",
        "revision) between the writes and this watch from the create's resourceVersion (<RV1>): HTTP 200, one",
        "ERROR event carrying a Status 410 reason Expired, then the stream ends at once."],
    "lease-put-429-overload": [
        "A second control plane started with --max-mutating-requests-inflight=1 --enable-priority-and-fairness=false;",
        "another POST by the same ServiceAccount held the only mutating slot (headers sent, body half-sent).",
        "Both requests by the ServiceAccount (system:masters is exempt from max-in-flight)."],
    "rbac-sa-watch-fieldselector-200": [
        "SA golden/elector; Role: create leases (no resourceNames); get/update/watch/list leases resourceNames=[lease-a];"
        " create/patch/update events (core + events.k8s.io).",
        "Watch without resourceVersion, fieldSelector matches resourceNames: allowed (synthetic ADDED, then clean end)."],
}
FRAMING = "HTTP/1.1 chunk framing kept as received (CRLF; chunk sizes count the original bytes)."
LEFT_OUT = ("BOOKMARKs that only kube-apiserver's own kube-system Lease renewals made due are left out "
            "(README, replay.quiet_bookmarks).")


def log(msg):
    print("capture: " + msg, file=sys.stderr, flush=True)


class ControlPlane(control_plane.ControlPlane):
    """The suites' one start.sh wrapper, up once made, with golden/README.md's environment."""

    def __init__(self, path, flags=()):
        super().__init__(flags=flags, directory=path)
        self.up()
        self.ca, self.admin = str(self.ca), self.admin_token

    def environment(self):
        """rbac.yaml, then a TokenRequest token for golden/elector (what `kubectl create token` gives)."""
        self.kubectl("apply", "-f", os.path.join(HERE, "rbac.yaml"))
        return self.token("golden", "elector")

    def restart_apiserver(self):
        self.restart("apiserver", "TERM")


class Capture(replay.Runner):
    """replay.Runner whose comparisons record the answer instead of judging it."""

    def __init__(self, args, cp, sa_token):
        a = argparse.Namespace(server=cp.url, ca=cp.ca, token=cp.admin, sa_token=sa_token, namespace="golden",
                               etcd=cp.env["ETCD_URL"], golden=args.src, with_tags=set(replay.TAGS), only=None,
                               skip=None, list=False, json=None, real=False)
        super().__init__(a)
        self.cp = cp
        self.records = {}
        self.raw_watch = None
        self.t0 = 0.0

    def secrets(self):
        return [(self.a.token, "<ADMIN-TOKEN>"), (self.a.sa_token, "<SA-TOKEN>")]

    def record(self, g, ctx, binds, status, reason, headers, body, elapsed=None):
        prefix = next(iter(ctx["names"].values()))[:-len(next(iter(ctx["names"])))] if ctx["names"] else None
        text = body.decode("utf-8")
        if prefix:
            text = text.replace(prefix, "")
        self.records[g["name"]] = {"status": status, "reason": reason, "headers": headers, "body": text,
                                   "binds": dict(binds), "elapsed": elapsed, "hostport": self.hostport,
                                   "secrets": self.secrets(), "own": set(ctx["names"])}
        return "captured %d" % status

    # --- the Runner's comparison hooks
    def compare(self, g, ctx, binds, st, hd, b):
        return self.record(g, ctx, binds, st, self.cl.last.reason, self.cl.last.getheaders(), b)

    def open_watch(self, g, req, limit):
        self.t0 = time.monotonic()
        return super().open_watch(g, req, limit)

    def read_watch(self, c, r, limit):
        """The raw chunk framing (size lines, CRLF) up to the terminating 0 chunk, events parsed from it."""
        raw = b""
        try:
            if not r.chunked:
                raw = r.read()
            else:
                while True:
                    line = r.fp.readline()
                    if not line:
                        break  # closed without the final chunk: recorded as it came
                    raw += line
                    size = int(line.split(b";")[0].strip(), 16)
                    if size == 0:
                        raw += r.fp.readline()
                        break
                    raw += r.fp.read(size + 2)
        finally:
            c.close()
        self.raw_watch = raw
        return replay.watch_events(raw.decode("utf-8")), raw

    def compare_watch(self, g, ctx, binds, r, evs, raw_if_not_200=None):
        body, dropped = raw_if_not_200, 0
        if r.status == 200:
            m = re.search(r"resourceVersion=<(RV\d+)>", g["target"])
            body, dropped = quiet_world(self.raw_watch, int(binds[m.group(1)]) if m else None)
        rec = self.record(g, ctx, binds, r.status, r.reason, r.getheaders(), body, time.monotonic() - self.t0)
        self.records[g["name"]]["dropped"] = dropped
        self.records[g["name"]]["bookmarks"] = "allowWatchBookmarks=true" in g["target"]
        return rec + (", %d BOOKMARK(s) left out" % dropped if dropped else "")

    # --- the two cases replay.py cannot set up
    def too_old_after_restart(self, g):
        ctx = self.new_case_ctx(g)
        try:
            binds = replay.written_then_changed(self, ctx, self.cp.restart_apiserver)
            return self.do_watch(g, ctx, binds, self.build_request(g, ctx, binds))
        finally:
            self.cleanup(ctx)

    def overload(self, g, tmp):
        cp2 = ControlPlane(os.path.join(tmp, "overload"), OVERLOAD_FLAGS)
        try:
            sa = cp2.environment()
            saved = (self.cl, self.a.token, self.a.sa_token, self.hostport)
            self.cl, self.a.token, self.a.sa_token = replay.Client(cp2.url, cp2.ca), cp2.admin, sa
            u = urllib.parse.urlsplit(cp2.url)
            self.hostport = "%s:%d" % (u.hostname, u.port)
            ctx = self.new_case_ctx(g)
            ctx["names"] = {}  # the literal lease-a of the request
            try:
                self.send(self.goldens["lease-create-201"], ctx, {}, check_2xx=True)
                holder = self.hold_mutating_slot(u, sa)
                try:
                    time.sleep(1.0)
                    binds = {}
                    m, path, h, body = self.build_request(g, ctx, binds)
                    st, hd, b = self.cl.request(m, path, h, body)
                    return self.compare(g, ctx, binds, st, hd, b)
                finally:
                    holder.close()
            finally:
                self.cleanup(ctx)
                self.cl, self.a.token, self.a.sa_token, self.hostport = saved
        finally:
            cp2.down()

    @staticmethod
    def hold_mutating_slot(u, token):
        """A POST whose body is half-sent: it keeps its max-in-flight slot until the body completes or times out."""
        ctx = ssl.create_default_context(cafile=None)
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE  # only a slot holder; nothing it reads matters
        s = ctx.wrap_socket(socket.create_connection((u.hostname, u.port), timeout=30))
        body = b'{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"holder"},"spec":{}}'
        s.sendall(("POST /apis/coordination.k8s.io/v1/namespaces/golden/leases HTTP/1.1\r\nHost: %s:%d\r\n"
                   "Authorization: Bearer %s\r\nContent-Type: application/json\r\nUser-Agent: %s\r\n"
                   "Content-Length: %d\r\n\r\n" % (u.hostname, u.port, token, replay.UA, len(body))).encode()
                  + body[:len(body) // 2])
        return s


def quiet_world(raw, since):
    """The raw chunked watch stream without the BOOKMARKs only the server's own writes made due
    (replay.quiet_bookmarks). Chunks stay as received, except that a chunk losing a line gets its size
    recomputed. -> (raw, dropped)"""
    chunks, rest, pos = [], b"", 0
    while True:
        eol = raw.find(b"\r\n", pos)
        if eol < 0:
            rest = raw[pos:]
            break
        size = int(raw[pos:eol].split(b";")[0], 16)
        if size == 0:
            rest = raw[pos:]
            break
        chunks.append(raw[eol + 2:eol + 2 + size].splitlines(keepends=True))
        pos = eol + 2 + size + 2
    flags = replay.quiet_bookmarks([json.loads(ln) for c in chunks for ln in c if ln.strip()], since)
    keep = iter(flags)
    out = b""
    for c in chunks:
        kept = [ln for ln in c if not ln.strip() or next(keep)]
        if any(ln.strip() for ln in kept):
            data = b"".join(kept)
            out += b"%x\r\n" % len(data) + data + b"\r\n"
    return out + rest, flags.count(False)


# ----------------------------------------------------------------------------------------------- writing
def comments_for(name, src_comments, rec):
    lines = COMMENTS.get(name, src_comments)
    out = []
    for ln in lines:
        ln = re.sub(r"\s*Captured with curl --raw \(HTTP/1\.1 chunk framing kept, CRLF\)\.", "", ln)
        ln = re.sub(r"\s*Captured with curl --raw: chunk-size lines \(hex\) are the real HTTP/1\.1 chunked framing;"
                    r" final 0 chunk = clean end at timeoutSeconds=(\d+)\.", r" Final 0 chunk = clean end at timeoutSeconds=\1.", ln)
        ln = re.sub(r"\s*Elapsed [\d.]+ s\.", "", ln)
        if ln.strip() and not ln.startswith((FRAMING, LEFT_OUT, "Left out:")):  # made below, again
            out.append(ln.strip())
    if rec["elapsed"] is not None and rec["status"] == 200:
        out.append("%s Elapsed %.0f s." % (FRAMING, rec["elapsed"]))  # whole seconds: no noise on refresh
    if rec["elapsed"] is not None and rec["status"] == 200 and rec["bookmarks"]:
        out.append(LEFT_OUT)  # said whether any came this time: a refresh does not flip it
    return out


def trimmed(name, src, text):
    if name == "discovery-api-v1-trimmed":
        keep = {r["name"] for r in json.loads(src["rbody"])["resources"]}
        j = json.loads(text)
        j["resources"] = [r for r in j["resources"] if r.get("name") in keep]
        return json.dumps(j, separators=(",", ":"), ensure_ascii=False) + "\n"
    if name == "openapi-v2":
        return text[:400] + "\n...<TRUNCATED: real body is several MB>...\n"
    return text


def render(name, src_path, src, rec):
    raw = open(src_path, encoding="utf-8", newline="").read()
    request = raw.split(">>> REQUEST\n", 1)[1].split("<<< RESPONSE\n", 1)[0]
    body = replay.normalise(trimmed(name, src, rec["body"]), rec["binds"], rec["hostport"], rec["secrets"])
    if "rows_only_own" in replay.SETUP.get(name, {}):
        own = set(rec["own"])
        rows = [r["object"]["metadata"]["name"] for r in json.loads(body)["rows"]]
        if not set(rows) <= own:
            raise ValueError("%s: rows of objects the case did not create: %s" % (name, sorted(set(rows) - own)))
    head = ["HTTP/1.1 %d %s" % (rec["status"], rec["reason"])]
    for k, v in rec["headers"]:
        if k.lower() in KEPT_HEADERS:
            head.append("%s: %s" % (k, "<LEN>" if k.lower() == "content-length" else v))
    text = "".join("# %s\n" % c for c in comments_for(name, src["comments"], rec))
    return text + ">>> REQUEST\n" + request + "<<< RESPONSE\n" + "\n".join(head) + "\n\n" + body


def leftover_times(text):
    """Whole-day timestamps of the capture day still in a body: a server-set time the rules do not cover yet."""
    today = time.strftime("%Y-%m-%d", time.gmtime())
    return sorted(set(re.findall(r'"([A-Za-z]+)":"%sT[0-9:.]+Z"' % today, text)))


def update_readme(out, version):
    p = os.path.join(out, "README.md")
    if not os.path.exists(p):
        return
    s = open(p, encoding="utf-8").read()
    line = "Captured %s from kube-apiserver %s by `capture.py`." % (time.strftime("%Y-%m-%d", time.gmtime()), version)
    s2 = re.sub(r"^Captured \d{4}-\d\d-\d\d from kube-apiserver \S+ by `capture.py`\.$", line, s, flags=re.M)
    if s2 != s:
        open(p, "w", encoding="utf-8").write(s2)


def check(args, tmp):
    """The captures still describe the real server: replay.py against a fresh control plane (--real)."""
    cp = None
    try:
        cp = ControlPlane(os.path.join(tmp, "main"))
        sa = cp.environment()
        argv = ["--server", cp.url, "--ca", cp.ca, "--token", cp.admin, "--sa-token", sa, "--golden", args.src,
                "--with", "all", "--etcd", cp.env["ETCD_URL"], "--real"]
        for p in args.only or []:
            argv += ["--only", p]
        return replay.main(argv)
    finally:
        if cp:
            cp.down()
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--from", dest="src", default=HERE, help="directory whose *.http requests are replayed")
    ap.add_argument("--out", default=HERE, help="directory the captures are written to")
    ap.add_argument("--only", action="append", help="capture only cases matching GLOB (repeatable)")
    ap.add_argument("--keep", help="control-plane directory to use and keep (default: a temporary one, removed)")
    ap.add_argument("--check", action="store_true",
                    help="capture nothing: replay the captures (exact text) against a fresh real control plane "
                         "set up the same way; exit 1 when one disagrees (ctest apiserver.golden_real)")
    args = ap.parse_args(argv)
    for tool in ("kubectl", "openssl", "curl"):
        if not shutil.which(tool):
            ap.error("%s not found on PATH" % tool)
    tmp = args.keep or tempfile.mkdtemp(prefix="golden-capture-")
    os.makedirs(tmp, exist_ok=True)
    if args.check:
        return check(args, tmp)
    cp = rn = None
    failed = []
    try:
        log("starting the real control plane in %s" % tmp)
        cp = ControlPlane(os.path.join(tmp, "main"))
        rn = Capture(args, cp, cp.environment())
        st, ver = rn.cl.admin(cp.admin, "GET", "/version")
        version = ver["gitVersion"]
        log("kube-apiserver %s at %s" % (version, cp.url))
        names = [n for n in rn.goldens if not args.only or any(fnmatch.fnmatch(n, p) for p in args.only)]
        # fresh first (the watch cache window), the restart last but one, the second control plane last
        special = {"watch-too-old-rv-410": lambda g: rn.too_old_after_restart(g),
                   "lease-put-429-overload": lambda g: rn.overload(g, tmp)}
        names.sort(key=lambda n: (0 if replay.FILE_TAGS.get(n) == "fresh" else 2 if n in special else 1,
                                  n == "lease-put-429-overload", n))
        for n in names:
            g = rn.goldens[n]
            t0 = time.monotonic()
            try:
                detail = special[n](g) if n in special else rn.run_case(g)
            except Exception as e:  # noqa: BLE001  (a case that cannot be captured is reported, the rest go on)
                failed.append(n)
                detail = "FAILED %s: %s" % (type(e).__name__, e)
            print("%-50s %5.1fs %s" % (n, time.monotonic() - t0, detail), flush=True)
        os.makedirs(args.out, exist_ok=True)
        for n in names:
            if n not in rn.records:
                continue
            src_path = os.path.join(args.src, n + ".http")
            try:
                text = render(n, src_path, rn.goldens[n], rn.records[n])
            except ValueError as e:
                failed.append(n)
                print("%s: FAILED to render: %s" % (n, e), flush=True)
                continue
            left = leftover_times(text.split("<<< RESPONSE\n", 1)[1])
            if left:
                log("%s: server-set times not normalised: %s" % (n, ", ".join(left)))
            with open(os.path.join(args.out, n + ".http"), "w", encoding="utf-8", newline="") as fh:
                fh.write(text)
        update_readme(args.out, version)
    finally:
        if cp:
            cp.down()
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print("capture: %d cases written to %s, %d failed%s" % (len(rn.records) if rn else 0, args.out, len(failed),
                                                            (": " + " ".join(failed)) if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
