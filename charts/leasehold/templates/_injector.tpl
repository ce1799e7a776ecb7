{{/*
The injector's CEL (templates/injector.yaml): the sidecar as the example Deployment has it
(leasehold.sidecar), built from the parameters ConfigMap (params.data) and the pod's
annotations (variables); the status file's volume and its read-only mount. Written once here,
used where the pod has the list and where it has none.
*/}}
{{- define "leasehold.injectedSidecarCEL" -}}
Object.spec.initContainers{
  name: "leasehold",
  image: params.data.image,
  imagePullPolicy: params.data.imagePullPolicy,
  restartPolicy: "Always",
  args: [
    "--lease-name=" + variables.notes["leasehold.io/lease"],
    "--lease-duration=" + variables.leaseDuration,
    "--renew-deadline=" + variables.renewDeadline,
    "--retry-period=" + variables.retryPeriod,
    "--http-address=127.0.0.1:" + params.data.httpPort,
    "--probe-address=0.0.0.0:" + params.data.probePort,
    "--status-file=/var/run/leasehold/status.json"
  ] + variables.shardArgs + [
    "--log-format=" + params.data.logFormat,
    "--log-level=" + params.data.logLevel
  ],
  env: [
    Object.spec.initContainers.env{name: "POD_NAME",
      valueFrom: Object.spec.initContainers.env.valueFrom{
        fieldRef: Object.spec.initContainers.env.valueFrom.fieldRef{fieldPath: "metadata.name"}}},
    Object.spec.initContainers.env{name: "POD_NAMESPACE",
      valueFrom: Object.spec.initContainers.env.valueFrom{
        fieldRef: Object.spec.initContainers.env.valueFrom.fieldRef{fieldPath: "metadata.namespace"}}},
    Object.spec.initContainers.env{name: "POD_IP",
      valueFrom: Object.spec.initContainers.env.valueFrom{
        fieldRef: Object.spec.initContainers.env.valueFrom.fieldRef{fieldPath: "status.podIP"}}}
  ],
  ports: [Object.spec.initContainers.ports{
    name: "lh-probes", containerPort: int(params.data.probePort), protocol: "TCP"}],
  startupProbe: Object.spec.initContainers.startupProbe{
    httpGet: Object.spec.initContainers.startupProbe.httpGet{path: "/healthz", port: "lh-probes"},
    periodSeconds: 1, failureThreshold: 30},
  livenessProbe: Object.spec.initContainers.livenessProbe{
    httpGet: Object.spec.initContainers.livenessProbe.httpGet{path: "/healthz", port: "lh-probes"},
    periodSeconds: 10, timeoutSeconds: 2, failureThreshold: 3},
  readinessProbe: Object.spec.initContainers.readinessProbe{
    httpGet: Object.spec.initContainers.readinessProbe.httpGet{path: "/readyz", port: "lh-probes"},
    periodSeconds: 5, timeoutSeconds: 2},
  resources: Object.spec.initContainers.resources{
    requests: {"cpu": params.data.cpuRequest, "memory": params.data.memoryRequest},
    limits: {"memory": params.data.memoryLimit}},
  securityContext: Object.spec.initContainers.securityContext{
    allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, runAsNonRoot: true,
    runAsUser: 65532, runAsGroup: 65532,
    capabilities: Object.spec.initContainers.securityContext.capabilities{drop: ["ALL"]},
    seccompProfile: Object.spec.initContainers.securityContext.seccompProfile{type: "RuntimeDefault"}},
  volumeMounts: [Object.spec.initContainers.volumeMounts{
    name: "leasehold-status", mountPath: "/var/run/leasehold"}]
}
{{- end -}}

{{- define "leasehold.injectedVolumeCEL" -}}
Object.spec.volumes{name: "leasehold-status",
  emptyDir: Object.spec.volumes.emptyDir{medium: "Memory", sizeLimit: "1Mi"}}
{{- end -}}

{{- define "leasehold.injectedMountCEL" -}}
Object.spec.containers.volumeMounts{
  name: "leasehold-status", mountPath: "/var/run/leasehold", readOnly: true}
{{- end -}}
