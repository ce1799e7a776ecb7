"""Plain HTTP requests to the processes under test (one connection each)."""
import http.client
import json


def http_get(port, path, timeout=1.0, host="127.0.0.1"):
    """(status, body) or (0, error) when nothing answered."""
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read().decode()
    except OSError as e:
        return 0, str(e)
    finally:
        conn.close()


def http_request(port, method, path, body=None, timeout=2.0, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
        conn.request(method, path, body=data, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, resp.read().decode()
    finally:
        conn.close()
