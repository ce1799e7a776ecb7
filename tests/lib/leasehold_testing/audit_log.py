"""kube-apiserver's audit log as events and per-user counters."""
import json
from pathlib import Path


class AuditLog:
    """kube-apiserver's audit log (JSON lines, level Metadata): user, verb, resource and code of
    every request. Offsets are byte positions: RealEnv remembers one to reset its counters."""

    def __init__(self, path):
        self.path = Path(path)

    def size(self):
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            return 0

    def events(self, since=0):
        """One event per request since `since`: a watch when it started streaming (or, if it
        never did, its refusal); anything else when it finished."""
        try:
            with open(self.path, "rb") as f:
                f.seek(since)
                data = f.read()
        except FileNotFoundError:
            return []
        out = []
        seen = set()
        for line in data[:data.rfind(b"\n") + 1].splitlines():
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if e.get("auditID") in seen:
                continue  # a watch's ResponseComplete after its ResponseStarted
            seen.add(e.get("auditID"))
            code = e.get("responseStatus", {}).get("code")
            if e.get("verb") == "watch":
                if e.get("stage") == "ResponseComplete" and code == 200:
                    continue  # the end of a watch that started before `since`
            elif e.get("stage") == "ResponseStarted":
                continue
            out.append(e)
        return out

    @staticmethod
    def counters_of(events, by_resource=False):
        """{user: {verb: n}} of resource requests, like the test server's /counters."""
        out = {}
        for e in events:
            ref = e.get("objectRef")
            if not ref or not ref.get("resource"):
                continue
            key = f"{e['verb']}:{ref['resource']}" if by_resource else e["verb"]
            verbs = out.setdefault(e["user"]["username"], {})
            verbs[key] = verbs.get(key, 0) + 1
        return out
