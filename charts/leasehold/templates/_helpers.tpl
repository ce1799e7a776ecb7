{{/*
Named templates. The ones marked PUBLIC are meant to be included from your own chart (with
this chart as a dependency called "leasehold"); see charts/leasehold/README.md. They read only
.Values (this chart's values), .Release and .Chart, so you can pass them
  (dict "Values" .Values.leasehold "Release" .Release "Chart" .Chart)

tests/deploy/test_chart.py renders the chart with helm and compares the result with
manifests/; tests/deploy/test_helm_real.py installs it on a real kube-apiserver.

Over 400 lines because every template the sidecar's container, its flags, its checks and its
RBAC share is here, so that the example, run mode, the helm test, the subchart usage and the
leases entries render from one copy; the injector's CEL has a file of its own (_injector.tpl).
*/}}

{{/* The name of every object of the release. */}}
{{- define "leasehold.fullname" -}}
{{- .Values.fullnameOverride | default .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* PUBLIC: the Lease the replicas compete for. */}}
{{- define "leasehold.leaseName" -}}
{{- .Values.leaseName | default (include "leasehold.fullname" .) -}}
{{- end -}}

{{/* PUBLIC: the ServiceAccount the pods must run as. */}}
{{- define "leasehold.serviceAccountName" -}}
{{- .Values.serviceAccount.name | default (include "leasehold.fullname" .) -}}
{{- end -}}

{{/* Labels that select the example pods. */}}
{{- define "leasehold.selectorLabels" -}}
app.kubernetes.io/name: leasehold
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/*
The leasehold image: repository:tag, and @digest when image.digest is set (the tag then only
names it for people; the runtime pulls the digest). The schema keeps "@" out of the tag, so that
the tag stays a valid label value.
*/}}
{{- define "leasehold.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s:%s@%s" .Values.image.repository .Values.image.tag .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository .Values.image.tag -}}
{{- end -}}
{{- end -}}

{{/*
Seconds in a Go duration ("1m30s", "1.5s", "500ms") as a float; the schema keeps the text one.
*/}}
{{- define "leasehold.seconds" -}}
{{- $scale := dict "ns" 1e-9 "us" 1e-6 "µs" 1e-6 "ms" 0.001 "s" 1.0 "m" 60.0 "h" 3600.0 -}}
{{- $total := 0.0 -}}
{{- range regexFindAll "([0-9]+(\\.[0-9]*)?|\\.[0-9]+)(ns|us|µs|ms|s|m|h)" . -1 -}}
{{- $number := regexFind "^([0-9]+(\\.[0-9]*)?|\\.[0-9]+)" . -}}
{{- $unit := trimPrefix $number . -}}
{{- $total = addf $total (mulf (float64 $number) (get $scale $unit)) -}}
{{- end -}}
{{- $total -}}
{{- end -}}

{{/*
The sidecar's own rules for the timings (election/ElectionTimings.cpp), checked when rendering
so that bad values fail `helm install` with the values' names instead of a CrashLoopBackOff;
and in run mode, a drain that ends before the kubelet's SIGKILL. Renders nothing.
*/}}
{{- define "leasehold.checkTimings" -}}
{{- $t := .Values.timings -}}
{{- $d := include "leasehold.seconds" $t.leaseDuration | float64 -}}
{{- $r := include "leasehold.seconds" $t.renewDeadline | float64 -}}
{{- $p := include "leasehold.seconds" $t.retryPeriod | float64 -}}
{{- if le $p 0.0 -}}
{{- fail (printf "timings.retryPeriod (%s) must be greater than 0" $t.retryPeriod) -}}
{{- end -}}
{{- if le $r (mulf 1.2 $p) -}}
{{- fail (printf "timings.renewDeadline (%s) must be greater than 1.2 x timings.retryPeriod (%s), so the leader gets more than one try before it steps down" $t.renewDeadline $t.retryPeriod) -}}
{{- end -}}
{{- if le $d $r -}}
{{- fail (printf "timings.leaseDuration (%s) must be greater than timings.renewDeadline (%s): the leader must stop claiming before anyone else may take over" $t.leaseDuration $t.renewDeadline) -}}
{{- end -}}
{{- if $t.renewInterval -}}
{{- $i := include "leasehold.seconds" $t.renewInterval | float64 -}}
{{- $timeout := maxf 0.5 (minf 5.0 (divf $r 2.0)) -}}
{{- $grace := 0.0 -}}
{{- if .Values.runMode.enabled -}}
{{- $grace = minf 5.0 (divf $r 2.0) -}}
{{- if .Values.runMode.killGrace -}}
{{- $grace = include "leasehold.seconds" .Values.runMode.killGrace | float64 -}}
{{- end -}}
{{- end -}}
{{- if le $i 0.0 -}}
{{- fail (printf "timings.renewInterval (%s) must be greater than 0" $t.renewInterval) -}}
{{- end -}}
{{- if gt (addf $i $timeout $p) (subf $r $grace) -}}
{{- fail (printf "timings.renewInterval (%s) + the request timeout (%vs, half of timings.renewDeadline within 0.5s..5s) + timings.retryPeriod (%s) must be at most timings.renewDeadline (%s)%s: a renewal that fails must leave time for a retry" $t.renewInterval $timeout $t.retryPeriod $t.renewDeadline (ternary (printf " - the run mode's kill grace (%vs)" $grace) "" .Values.runMode.enabled)) -}}
{{- end -}}
{{- end -}}
{{- if and .Values.runMode.enabled (hasKey .Values "terminationGracePeriodSeconds") -}}
{{- $drain := include "leasehold.seconds" (.Values.runMode.drainTimeout | default "25s") | float64 -}}
{{- $grace := .Values.terminationGracePeriodSeconds | float64 -}}
{{- if gt (addf $drain 2.0) $grace -}}
{{- fail (printf "runMode.drainTimeout (%s) must end at least 2s before terminationGracePeriodSeconds (%v): the kubelet kills the container then, and the Lease is released only after the drain" (.Values.runMode.drainTimeout | default "25s, the default") .Values.terminationGracePeriodSeconds) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
Whether the sidecar is native (an init container with restartPolicy: Always): "true" or "".
sidecar.native when set; else by the Kubernetes version (1.29+), and native when the caller
passes no .Capabilities (a parent chart's `dict "Values" ...`).
*/}}
{{- define "leasehold.native" -}}
{{- if kindIs "bool" .Values.sidecar.native -}}
{{- ternary "true" "" .Values.sidecar.native -}}
{{- else if and (hasKey . "Capabilities") .Capabilities -}}
{{- ternary "true" "" (semverCompare ">=1.29.0-0" .Capabilities.KubeVersion.Version) -}}
{{- else -}}
true
{{- end -}}
{{- end -}}

{{/* Labels of every object. */}}
{{- define "leasehold.labels" -}}
{{ include "leasehold.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/component: leader-election
app.kubernetes.io/part-of: leasehold
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/*
The pod spec's pulling and placement fields from the values of the same names, each only when
set (may render nothing): the example's pods and the helm test pod. Affinity and topology
spread are the example Deployment's alone (deployment.yaml): they name its pods' labels.
*/}}
{{- define "leasehold.podPlacement" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . | quote }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/*
The helm test's objects' labels: every object's, but not the example's name, so that neither
the monitors nor the leader Service (both select app.kubernetes.io/name: leasehold) pick the
test pod.
*/}}
{{- define "leasehold.testLabels" -}}
{{- $labels := include "leasehold.labels" . | fromYaml -}}
{{- $_ := set $labels "app.kubernetes.io/name" "leasehold-test" -}}
{{- $_ = set $labels "app.kubernetes.io/component" "test" -}}
{{- toYaml $labels -}}
{{- end -}}

{{/*
The Lease the helm test's sidecar follows: the Lease, or shard 0's in shard mode (the shard
Leases are <lease>-0 .. <lease>-(N-1)).
*/}}
{{- define "leasehold.testLeaseName" -}}
{{- if gt (int .Values.shards) 0 -}}
{{- printf "%s-0" (include "leasehold.leaseName" .) -}}
{{- else -}}
{{- include "leasehold.leaseName" . -}}
{{- end -}}
{{- end -}}

{{/*
The Role rules of one Lease (its name is the argument): what the sidecar uses on it, and no
create (the Lease is made by the chart).
*/}}
{{- define "leasehold.leaseRules" -}}
# Read, renew and watch exactly this Lease (list and watch with
# fieldSelector=metadata.name=<lease>; anything else is 403).
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  resourceNames: [{{ . | quote }}]
  verbs: ["get", "update", "watch", "list"]
# "<identity> became leader" / "stopped leading" Events on the Lease.
- apiGroups: ["", "events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- end -}}

{{/* Pod-level securityContext: leasehold runs as a non-root numeric user. */}}
{{- define "leasehold.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* Container-level securityContext for leasehold (and a good default for your app). */}}
{{- define "leasehold.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
capabilities:
  drop:
    - ALL
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/*
PUBLIC: the leasehold container as one list item. Put it under initContainers when
`include "leasehold.native" .` is "true" (it carries restartPolicy: Always), under containers
otherwise.
*/}}
{{- define "leasehold.sidecar" -}}
- name: leasehold
  image: {{ include "leasehold.image" . | quote }}
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  {{- if include "leasehold.native" . }}
  restartPolicy: Always
  {{- end }}
  args:
    {{- include "leasehold.electionArgs" . | nindent 4 }}
  {{- include "leasehold.envPortsProbes" (dict "root" . "container" "leasehold") | nindent 2 }}
  resources:
    {{- toYaml .Values.resources | nindent 4 }}
  securityContext:
    {{- include "leasehold.containerSecurityContext" . | nindent 4 }}
  {{- if .Values.statusFile.enabled }}
  volumeMounts:
    - name: leasehold-status
      mountPath: /var/run/leasehold
  {{- end }}
{{- end -}}

{{/* The election flags of the sidecar and of `leasehold run`, as list items. */}}
{{- define "leasehold.electionArgs" -}}
{{- include "leasehold.checkTimings" . -}}
- --lease-name={{ include "leasehold.leaseName" . }}
- --lease-duration={{ .Values.timings.leaseDuration }}
- --renew-deadline={{ .Values.timings.renewDeadline }}
- --retry-period={{ .Values.timings.retryPeriod }}
{{- if .Values.timings.renewInterval }}
- --renew-interval={{ .Values.timings.renewInterval }}
{{- end }}
- --http-address=127.0.0.1:{{ .Values.httpPort }}
- --probe-address=0.0.0.0:{{ .Values.probePort }}
{{- if .Values.statusFile.enabled }}
- --status-file=/var/run/leasehold/status.json
{{- end }}
{{- if .Values.podLabel }}
- --pod-label={{ .Values.podLabel }}
{{- end }}
{{- if .Values.coordinated }}
- --coordinated=true
{{- end }}
{{- if .Values.fastFailover }}
{{- if .Values.statusFile.enabled }}{{ fail "fastFailover needs statusFile.enabled=false: a status file outlives the process that wrote it, so after a crash its reader would trust validUntil while another replica already leads (read /leader/watch instead)" }}{{- end }}
{{- if gt (int .Values.shards) 0 }}{{ fail "fastFailover and shards cannot be used together" }}{{- end }}
{{- if .Values.coordinated }}{{ fail "fastFailover and coordinated cannot be used together" }}{{- end }}
- --fast-failover
{{- end }}
{{- if gt (int .Values.shards) 0 }}
{{- if .Values.podLabel }}{{ fail "shards and podLabel cannot be used together" }}{{- end }}
- --shards={{ .Values.shards }}
{{- end }}
- --log-format={{ .Values.logFormat }}
- --log-level={{ .Values.logLevel }}
{{- range .Values.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end -}}

{{/*
Downward API env, the probe port and the probes of whichever container runs leasehold; called
with (dict "root" $ "container" NAME), NAME being that container's.
*/}}
{{- define "leasehold.envPortsProbes" -}}
{{- $root := .root -}}
env:
  # Identity (POD_NAME + random suffix), lease namespace and the holderAddress on /leader.
  - name: POD_NAME
    valueFrom:
      fieldRef:
        fieldPath: metadata.name
  - name: POD_NAMESPACE
    valueFrom:
      fieldRef:
        fieldPath: metadata.namespace
  - name: POD_IP
    valueFrom:
      fieldRef:
        fieldPath: status.podIP
  {{- if $root.Values.fastFailover }}
  # --fast-failover: the holder's pod UID and container, recorded on the Lease for the kubelet's
  # word on whether its process exited.
  - name: POD_UID
    valueFrom:
      fieldRef:
        fieldPath: metadata.uid
  - name: LEASEHOLD_CONTAINER
    value: {{ .container | quote }}
  {{- end }}
ports:
  - name: lh-probes
    containerPort: {{ $root.Values.probePort }}
    protocol: TCP
# Listening before the app starts (native sidecar: the app waits for this probe).
startupProbe:
  httpGet:
    path: /healthz
    port: lh-probes
  periodSeconds: 1
  failureThreshold: 30
# Fails when this replica still holds the Lease but could not renew for D + 20 s.
livenessProbe:
  httpGet:
    path: /healthz
    port: lh-probes
  periodSeconds: 10
  timeoutSeconds: 2
  failureThreshold: 3
# Ready once the API server has answered once.
readinessProbe:
  httpGet:
    path: /readyz
    port: lh-probes
  periodSeconds: 5
  timeoutSeconds: 2
{{- end -}}

{{/*
Run mode (runMode.enabled): an init container from the leasehold image copies the binary
(/usr/local/bin/leasehold in the Dockerfile) into the emptyDir leasehold-bin. The binary copies
itself (`leasehold copy-self DEST`: temporary file, fsync, rename): the image is FROM scratch,
with no shell and no cp.
*/}}
{{- define "leasehold.runModeCopy" -}}
- name: leasehold-copy
  image: {{ include "leasehold.image" . | quote }}
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  command: ["/usr/local/bin/leasehold", "copy-self", "/leasehold/leasehold"]
  resources:
    {{- toYaml .Values.resources | nindent 4 }}
  securityContext:
    {{- include "leasehold.containerSecurityContext" . | nindent 4 }}
  volumeMounts:
    - name: leasehold-bin
      mountPath: /leasehold
{{- end -}}

{{/*
Run mode: the app container, whose PID 1 is `leasehold run <flags> -- <runMode.command>`.
The binary links glibc 2.36 dynamically: runMode.image needs glibc 2.36 or newer.
*/}}
{{- define "leasehold.runModeApp" -}}
- name: app
  image: {{ .Values.runMode.image | quote }}
  command:
    - /leasehold/leasehold
    - run
    {{- include "leasehold.electionArgs" . | nindent 4 }}
    {{- with .Values.runMode.killGrace }}
    - --kill-grace={{ . }}
    {{- end }}
    {{- with .Values.runMode.drainTimeout }}
    - --drain-timeout={{ . }}
    {{- end }}
    - --restart={{ .Values.runMode.restart }}
    {{- if .Values.runMode.exitOnLoss }}
    - --exit-on-loss
    {{- end }}
    - "--"
    {{- range .Values.runMode.command }}
    - {{ . | quote }}
    {{- end }}
  {{- with .Values.runMode.args }}
  args:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- include "leasehold.envPortsProbes" (dict "root" . "container" "app") | nindent 2 }}
  resources:
    {{- toYaml .Values.runMode.resources | nindent 4 }}
  securityContext:
    {{- include "leasehold.containerSecurityContext" . | nindent 4 }}
  volumeMounts:
    - name: leasehold-bin
      mountPath: /leasehold
      readOnly: true
    {{- if .Values.statusFile.enabled }}
    - name: leasehold-status
      mountPath: /var/run/leasehold
    {{- end }}
{{- end -}}

{{/* Run mode: the emptyDir for the binary and (statusFile.enabled) the status file. */}}
{{- define "leasehold.runModeVolumes" -}}
- name: leasehold-bin
  emptyDir:
    sizeLimit: 64Mi
{{- if .Values.statusFile.enabled }}
{{ include "leasehold.volumes" . }}
{{- end }}
{{- end -}}

{{/* PUBLIC: the volume for the status file, as one list item under volumes (may be empty). */}}
{{- define "leasehold.volumes" -}}
{{- if .Values.statusFile.enabled -}}
- name: leasehold-status
  emptyDir:
    medium: Memory
    sizeLimit: 1Mi
{{- end -}}
{{- end -}}

{{/* PUBLIC: the app container's read-only mount of the status file (may be empty). */}}
{{- define "leasehold.statusMount" -}}
{{- if .Values.statusFile.enabled -}}
- name: leasehold-status
  mountPath: /var/run/leasehold
  readOnly: true
{{- end -}}
{{- end -}}

{{/*
"true" when the Prometheus Operator's objects may be rendered: the cluster serves
monitoring.coreos.com/v1, or monitoringCRDs says they are installed.
*/}}
{{- define "leasehold.monitoringServed" -}}
{{- if or (eq .Values.monitoringCRDs "installed") (.Capabilities.APIVersions.Has "monitoring.coreos.com/v1") -}}
true
{{- end -}}
{{- end -}}

{{/* Labels of the pods the PodMonitor and the metrics Service select. */}}
{{- define "leasehold.metricsPodLabels" -}}
{{- if .Values.metrics.selectorLabels -}}
{{ toYaml .Values.metrics.selectorLabels }}
{{- else -}}
{{ include "leasehold.selectorLabels" . }}
{{- end -}}
{{- end -}}

{{/*
The relabeling both monitors share: every scraped series gets lease=<the Lease>, which the
alerts and the dashboard group by (the sidecar's own metrics carry no Lease label).
*/}}
{{- define "leasehold.leaseRelabeling" -}}
- action: replace
  targetLabel: lease
  replacement: {{ include "leasehold.leaseName" . | quote }}
{{- end -}}

{{/* The PromQL label matchers of this release's series: its namespace and its Lease. */}}
{{- define "leasehold.seriesMatchers" -}}
namespace="{{ .Release.Namespace }}", lease="{{ include "leasehold.leaseName" . }}"
{{- end -}}
