{{/*
The injector's CEL (templates/injector.yaml): the sidecar as the example Deployment has it
(leasehold.sidecar), built from the parameters ConfigMap (params.data) and the pod's
annotations (variables); the status file's volume and its read-only mount (none with
leasehold.io/fast-failover: "true", which refuses a status file). Written once here,
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
    "--probe-address=0.0.0.0:" + params.data.probePort
  ] + (variables.fast ? ["--fast-failover"] : ["--status-file=/var/run/leasehold/status.json"])
  + variables.shardArgs + [
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
  ] + (variables.fast ? [
    Object.spec.initContainers.env{name: "POD_UID",
      valueFrom: Object.spec.initContainers.env.valueFrom{
        fieldRef: Object.spec.initContainers.env.valueFrom.fieldRef{fieldPath: "metadata.uid"}}},
    Object.spec.initContainers.env{name: "LEASEHOLD_CONTAINER", value: "leasehold"}
  ] : []),
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
    requests: variables.requests, limits: variables.limits},
  securityContext: Object.spec.initContainers.securityContext{
    allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, runAsNonRoot: true,
    runAsUser: 65532, runAsGroup: 65532,
    capabilities: Object.spec.initContainers.securityContext.capabilities{drop: ["ALL"]},
    seccompProfile: Object.spec.initContainers.securityContext.seccompProfile{type: "RuntimeDefault"}},
  volumeMounts: variables.fast ? [] : [Object.spec.initContainers.volumeMounts{
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

{{/*
Who injects (injector.mode): "policy", the MutatingAdmissionPolicy (served from Kubernetes
1.36), or "webhook", `leasehold inject` behind a MutatingWebhookConfiguration (native sidecars:
1.29+). auto takes the policy where .Capabilities lists it (or skipVersionCheck says to render
it anyway), else the webhook where the server is 1.29+; otherwise the chart fails naming the
value.
*/}}
{{- define "leasehold.injectorMode" -}}
{{- $mode := .Values.injector.mode }}
{{- $map := .Capabilities.APIVersions.Has "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy" }}
{{- $native := semverCompare ">=1.29-0" .Capabilities.KubeVersion.Version }}
{{- $skip := .Values.injector.skipVersionCheck }}
{{- if eq $mode "policy" }}
{{- if not (or $map $skip) }}
{{- fail (printf "%s %s" "injector.enabled needs MutatingAdmissionPolicy (admissionregistration.k8s.io/v1,"
  "Kubernetes 1.36+), which this cluster does not serve (injector.mode policy; webhook serves 1.29+)") }}
{{- end }}policy
{{- else if eq $mode "webhook" }}
{{- if not (or $native $skip) }}
{{- fail (printf "injector.mode webhook needs Kubernetes 1.29+ (native sidecars); this cluster is %s" .Capabilities.KubeVersion.Version) }}
{{- end }}webhook
{{- else if or $map $skip }}policy
{{- else if $native }}webhook
{{- else }}
{{- fail (printf "injector.mode auto: this cluster (%s) serves neither MutatingAdmissionPolicy (Kubernetes 1.36+, injector.mode policy) nor native sidecars (1.29+, injector.mode webhook); the injector needs one of them" .Capabilities.KubeVersion.Version) }}
{{- end }}
{{- end -}}

{{/* The injector's cluster-scoped objects' name (policies, bindings, webhook configuration). */}}
{{- define "leasehold.injectorName" -}}
{{- printf "leasehold-inject.%s.%s" .Release.Namespace (include "leasehold.fullname" .) | trunc 253 }}
{{- end -}}

{{/*
One injector per cluster, whatever its mode: two would race for the same pods with different
parameters. Another release's policy or webhook configuration (lookup; nothing in helm
template) fails the install, naming it.
*/}}
{{- define "leasehold.oneInjector" -}}
{{- $name := include "leasehold.injectorName" . }}
{{- range $kind := list "MutatingAdmissionPolicy" "MutatingWebhookConfiguration" }}
{{- range (lookup "admissionregistration.k8s.io/v1" $kind "" "").items }}
{{- if and (hasPrefix "leasehold-inject." .metadata.name) (ne .metadata.name $name) }}
{{- fail (printf "injector.enabled: this cluster has a leasehold injector already, %s (one per cluster: enable it in one release)" .metadata.name) }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}

{{/* Labels of the webhook's pods (and the selector of its Deployment, Service and PDB). */}}
{{- define "leasehold.injectorSelectorLabels" -}}
app.kubernetes.io/name: leasehold-injector
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
