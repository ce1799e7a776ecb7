"""Kubeconfig files for the sidecars and kubectl."""


def write_kubeconfig(path, url, ca, user, token=None, token_file=None, namespace="default"):
    """A kubeconfig with one cluster, one user (a token, or a token file) and one context."""
    auth = f"    tokenFile: {token_file}\n" if token_file else f"    token: {token}\n"
    path.write_text(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster:\n"
        f"    server: {url}\n    certificate-authority: {ca}\n"
        f"users:\n- name: {user}\n  user:\n{auth}"
        f"contexts:\n- name: test\n  context:\n    cluster: test\n    user: {user}\n"
        f"    namespace: {namespace}\ncurrent-context: test\n")
    return path
