# Cluster access configuration: in-cluster, kubeconfig, token sources, exec plugins.
# Paths are relative to sidecar/kube; sidecar/kube/CMakeLists.txt includes this file.
set(LEASEHOLD_KUBE_CONFIG_SOURCES
  ExecCredential.cpp
  ExecCredentialPlugin.cpp
  ExecTokenSource.cpp
  FileTokenSource.cpp
  Kubeconfig.cpp
  KubeconfigBase64.cpp
  KubeconfigFile.cpp
  RestConfigFileReader.cpp
  RestConfigLoader.cpp
)
