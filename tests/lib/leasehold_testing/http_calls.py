"""Plain HTTP requests to the processes under test (one connection each). The default deadlines
(1 s for a GET, 2 s for another request, on release) are for a loaded machine: the sidecars and
the test API server's control port answer in milliseconds; they stretch with the slowdown."""
import http.client
import json

from .timings import slack


def http_get(port, path, timeout=None, host="127.0.0.1"):
    """(status, body) or (0, error) when nothing answered."""
    if timeout is None:
        timeout = slack(1.0)
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read().decode()
    except OSError as e:
        return 0, str(e)
    finally:
        conn.close()


def http_request(port, method, path, body=None, timeout=None, headers=None):
    if timeout is None:
        timeout = slack(2.0)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
        conn.request(method, path, body=data, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, resp.read().decode()
    finally:
        conn.close()
