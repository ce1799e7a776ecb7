"""Kubeconfig files for the sidecars and kubectl: the one writer, also of the start.sh scripts'
kubeconfigs (tests/apiserver, tests/realkube: main)."""
import sys
from pathlib import Path


def write_kubeconfig(path, url, ca, user, token=None, token_file=None, namespace="default",
                     cluster="test"):
    """A kubeconfig with one cluster, one user (a token, or a token file) and one context (named
    as the cluster)."""
    auth = f"    tokenFile: {token_file}\n" if token_file else f"    token: {token}\n"
    path.write_text(
        f"apiVersion: v1\nkind: Config\nclusters:\n- name: {cluster}\n  cluster:\n"
        f"    server: {url}\n    certificate-authority: {ca}\n"
        f"users:\n- name: {user}\n  user:\n{auth}"
        f"contexts:\n- name: {cluster}\n  context:\n    cluster: {cluster}\n    user: {user}\n"
        f"    namespace: {namespace}\ncurrent-context: {cluster}\n")
    return path


def main(argv):
    """NAME URL CA TOKEN OUT [NAMESPACE]: the start.sh scripts' kubeconfig (cluster, user and
    context all NAME; namespace default unless given)."""
    name, url, ca, token, out, *rest = argv
    namespace = rest[0] if rest else "default"
    write_kubeconfig(Path(out), url, ca, name, token=token, namespace=namespace, cluster=name)


if __name__ == "__main__":
    main(sys.argv[1:])
