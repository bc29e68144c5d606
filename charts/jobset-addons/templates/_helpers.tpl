{{/*
Shared helpers. Every per-controller template ranges over the controllers and calls the
helpers below with a context dict, so no template is written once per controller:

  {{- range $name := include "jobset-addons.controllers" . | splitList " " }}
  {{- $ctx := dict "root" $ "name" $name "values" (index $.Values $name) }}
  {{- if $ctx.values.enabled }}
  ...

  $ctx.root    the chart's top-level context ($)
  $ctx.name    controller name: volumeclaims, resourceclaims, sequencer or podgroups
  $ctx.values  that controller's block of values
*/}}

{{/* The controllers, in the order they are rendered. */}}
{{- define "jobset-addons.controllers" -}}
volumeclaims resourceclaims sequencer podgroups
{{- end }}

{{/* "true" when at least one controller is enabled, "" otherwise. */}}
{{- define "jobset-addons.anyEnabled" -}}
{{- range $name := include "jobset-addons.controllers" . | splitList " " }}
{{- if (index $.Values $name).enabled }}true{{ end }}
{{- end }}
{{- end }}

{{/* Names, all derived from the controller name; the binaries' flag defaults agree. */}}
{{- define "jobset-addons.fullname" -}}
jobset-addons-{{ .name }}
{{- end }}
{{- define "jobset-addons.webhookServiceName" -}}
{{ include "jobset-addons.fullname" . }}-webhook
{{- end }}
{{- define "jobset-addons.metricsServiceName" -}}
{{ include "jobset-addons.fullname" . }}-metrics
{{- end }}
{{- define "jobset-addons.certSecretName" -}}
{{ include "jobset-addons.fullname" . }}-webhook-cert
{{- end }}
{{- define "jobset-addons.certificateName" -}}
{{ include "jobset-addons.fullname" . }}-webhook
{{- end }}
{{- define "jobset-addons.leaderElectionID" -}}
{{ .name }}.jobset-addons.io
{{- end }}
{{/* One self-signed Issuer serves every controller (cert-manager mode). Takes the root context. */}}
{{- define "jobset-addons.issuerName" -}}
jobset-addons-selfsigned
{{- end }}

{{/* Where the webhook server reads tls.crt and tls.key. */}}
{{- define "jobset-addons.certDir" -}}
/tmp/k8s-webhook-server/serving-certs
{{- end }}

{{/* certManagement.mode, checked. Takes the root context. */}}
{{- define "jobset-addons.certMode" -}}
{{- $mode := .Values.certManagement.mode }}
{{- if not (has $mode (list "self-signed" "cert-manager")) }}
{{- fail (printf "certManagement.mode: %q is not self-signed or cert-manager" $mode) }}
{{- end }}
{{- $mode }}
{{- end }}

{{/* The binary's --cert-mode for the chart's certManagement.mode. Takes the root context. */}}
{{- define "jobset-addons.binaryCertMode" -}}
{{- if eq (include "jobset-addons.certMode" .) "cert-manager" }}external{{ else }}self-signed{{ end }}
{{- end }}

{{/* Labels on the chart's objects that belong to no single controller. Takes the root context. */}}
{{- define "jobset-addons.commonLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: jobset-addons
{{- end }}

{{/* Labels of a controller's objects. */}}
{{- define "jobset-addons.labels" -}}
{{ include "jobset-addons.commonLabels" .root }}
app.kubernetes.io/component: {{ .name }}
{{- end }}

{{/* Labels that select a controller's pods (immutable in a Deployment: never add a changing one). */}}
{{- define "jobset-addons.selectorLabels" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .name }}
{{- end }}

{{/* Standard metadata of a controller's object: name, namespace when namespaced, labels. */}}
{{- define "jobset-addons.metadata" -}}
name: {{ get . "objectName" | default (include "jobset-addons.fullname" .) }}
{{- if not (get . "clusterScoped") }}
namespace: {{ .root.Release.Namespace }}
{{- end }}
labels:
  {{- include "jobset-addons.labels" . | nindent 2 }}
{{- end }}

{{/* Checks across values the schema cannot express. Takes the root context. */}}
{{- define "jobset-addons.validate" -}}
{{- range $name := include "jobset-addons.controllers" . | splitList " " }}
{{- $c := index $.Values $name }}
{{- if and $c.enabled (gt (int $c.replicas) 1) (not $.Values.leaderElection.enabled) }}
{{- fail (printf "%s.replicas is %d but leaderElection.enabled is false: replicas would reconcile at the same time" $name (int $c.replicas)) }}
{{- end }}
{{- end }}
{{- end }}

{{- define "jobset-addons.image" -}}
{{ .values.image.repository }}:{{ .values.image.tag | default .root.Chart.AppVersion }}{{ with .values.image.digest }}@{{ . }}{{ end }}
{{- end }}

{{/* --feature-gates value, sorted by gate name; empty when no gate is set. */}}
{{- define "jobset-addons.featureGates" -}}
{{- $gates := list }}
{{- range $gate := keys .values.featureGates | sortAlpha }}
{{- $gates = append $gates (printf "%s=%t" $gate (index $.values.featureGates $gate)) }}
{{- end }}
{{- join "," $gates }}
{{- end }}

{{/* The controller's command-line arguments, as a YAML list. */}}
{{- define "jobset-addons.args" -}}
- --leader-elect={{ .root.Values.leaderElection.enabled }}
- --leader-election-id={{ include "jobset-addons.leaderElectionID" . }}
- --metrics-bind-address=:8080
- --health-probe-bind-address=:8081
- --webhook-port=9443
- --cert-mode={{ include "jobset-addons.binaryCertMode" .root }}
- --cert-dir={{ include "jobset-addons.certDir" . }}
- --cert-secret-name={{ include "jobset-addons.certSecretName" . }}
- --webhook-service-name={{ include "jobset-addons.webhookServiceName" . }}
- --webhook-configuration-name={{ include "jobset-addons.fullname" . }}
- --log-level={{ .values.logLevel }}
- --log-format={{ .root.Values.logFormat }}
- --shutdown-delay={{ .root.Values.shutdownDelay }}
{{- if gt (float64 .values.kubeAPIQPS) 0.0 }}
- --kube-api-qps={{ .values.kubeAPIQPS }}
{{- end }}
{{- if gt (int .values.kubeAPIBurst) 0 }}
- --kube-api-burst={{ .values.kubeAPIBurst }}
{{- end }}
{{- with include "jobset-addons.featureGates" . }}
- --feature-gates={{ . }}
{{- end }}
{{- if eq .name "sequencer" }}
- --barrier-image={{ include "jobset-addons.image" (dict "values" .root.Values.barrier "root" .root) }}
{{- with .root.Values.barrier.resources }}
- --barrier-cpu-request={{ .requests.cpu }}
- --barrier-cpu-limit={{ .limits.cpu }}
- --barrier-memory-request={{ .requests.memory }}
- --barrier-memory-limit={{ .limits.memory }}
{{- end }}
{{- end }}
{{- if eq .name "podgroups" }}
{{- with .root.Values.gangSchedulers }}
- --volcano-scheduler-name={{ .volcano.schedulerName }}
- --volcano-default-queue={{ .volcano.defaultQueue }}
- --coscheduling-scheduler-name={{ .coscheduling.schedulerName }}
- --kai-scheduler-name={{ .kai.schedulerName }}
- --kai-default-queue={{ .kai.defaultQueue }}
{{- end }}
{{- end }}
{{- range .values.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end }}

{{/*
RBAC.

"jobset-addons.commonRules": what every controller needs at this stage, cluster-wide.
"jobset-addons.rules": each controller's extra cluster-wide rules, keyed by controller name.
A controller's ClusterRole is the common rules followed by its own. When a controller gains a
feature that reads or writes another kind, add the rule here, in its entry only.
Events are allowed in both the core and the events.k8s.io API (controller-runtime uses both);
webhook configurations are updated by cert-controller, which injects the CA.
*/}}
{{- define "jobset-addons.commonRules" -}}
- apiGroups: ["jobset.x-k8s.io"]
  resources: ["jobsets"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["", "events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
- apiGroups: ["admissionregistration.k8s.io"]
  resources: ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["admissionregistration.k8s.io"]
  resources: ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"]
  resourceNames: [{{ include "jobset-addons.fullname" . | quote }}]
  verbs: ["update"]
{{- end }}

{{- define "jobset-addons.rules" -}}
volumeclaims:
  - apiGroups: [""]
    resources: ["persistentvolumeclaims"]
    verbs: ["get", "list", "watch", "create", "patch", "delete"]
  # The pods that hold PVCs retention deleted: listed to say so, and the JobSet's finished
  # ones deleted where the policy says finishedPods: Delete; the pods that use a PVC before it
  # expires (watched, trimmed to the PVCs they mount, where Kubernetes sets no Unused
  # condition); the pod stuck on a lost node (whenNodeLost: Recreate).
  - apiGroups: [""]
    resources: ["pods"]
    verbs: ["list", "watch", "delete"]
  # The Job controller's FailedCreate Events, to tell a JobSet whose pods are refused.
  - apiGroups: [""]
    resources: ["events"]
    verbs: ["list", "watch"]
  - apiGroups: ["batch"]
    resources: ["jobs"]
    verbs: ["get", "list", "watch"]
  # whenNodeLost: the node a PVC's volume is pinned to, by the PV's node affinity.
  - apiGroups: [""]
    resources: ["nodes", "persistentvolumes"]
    verbs: ["get", "list", "watch"]
resourceclaims:
  - apiGroups: ["resource.k8s.io"]
    resources: ["resourceclaims"]
    verbs: ["get", "list", "watch", "create", "patch", "delete"]
  # The retry annotation, once a claim another Job held under a Job's claim name is gone: the
  # write has JobSet create the Job its webhook refused now, not after JobSet's back-off.
  - apiGroups: ["jobset.x-k8s.io"]
    resources: ["jobsets"]
    verbs: ["patch"]
  # The Job controller's FailedCreate Events, to tell a JobSet whose pods are refused.
  - apiGroups: [""]
    resources: ["events"]
    verbs: ["list", "watch"]
  - apiGroups: ["batch"]
    resources: ["jobs"]
    verbs: ["get", "list", "watch"]
sequencer:
  - apiGroups: ["jobset.x-k8s.io"]
    resources: ["jobsets"]
    verbs: ["patch"]
  # create: the JobSet webhook's server-side dry runs of barrier pods (a dry run needs the verb);
  # the sequencer never creates a pod.
  - apiGroups: [""]
    resources: ["pods"]
    verbs: ["get", "list", "watch", "patch", "create"]
  # The Job controller's FailedCreate Events, to tell a JobSet whose pods are refused.
  - apiGroups: [""]
    resources: ["events"]
    verbs: ["list", "watch"]
  - apiGroups: ["batch"]
    resources: ["jobs"]
    verbs: ["get", "list", "watch"]
  # The start barrier: a pod on a node that is deleted or not Ready does not count as waiting.
  - apiGroups: [""]
    resources: ["nodes"]
    verbs: ["get", "list", "watch"]
podgroups:
  - apiGroups: ["scheduling.volcano.sh", "scheduling.x-k8s.io", "scheduling.run.ai"]
    resources: ["podgroups"]
    verbs: ["get", "list", "watch", "create", "patch", "delete"]
  # KAI Scheduler's Queues, read to warn of a PodGroup's queue that does not exist.
  - apiGroups: ["scheduling.run.ai"]
    resources: ["queues"]
    verbs: ["get"]
  - apiGroups: ["batch"]
    resources: ["jobs"]
    verbs: ["get", "list", "watch"]
  - apiGroups: ["scheduling.k8s.io"]
    resources: ["priorityclasses"]
    verbs: ["get", "list", "watch"]
  - apiGroups: ["scheduling.k8s.io"]
    resources: ["workloads", "podgroups", "compositepodgroups"]
    verbs: ["get", "list", "watch", "create", "patch", "delete"]
  # The retry annotation, once another JobSet's gang object of a gang's name is gone: the write
  # has JobSet create (or resume) the Job its webhook held now, not after JobSet's back-off.
  - apiGroups: ["jobset.x-k8s.io"]
    resources: ["jobsets"]
    verbs: ["patch"]
{{- end }}

{{/* A controller's ClusterRole rules: the common ones, then its own, as a YAML list. */}}
{{- define "jobset-addons.clusterRules" -}}
{{- $common := include "jobset-addons.commonRules" . | fromYamlArray }}
{{- $own := get (include "jobset-addons.rules" . | fromYaml) .name | default list }}
{{- toYaml (concat $common $own) }}
{{- end }}

{{/*
Rules in the release namespace, as a YAML list: leader election (its own lease by name: get,
create and update are all client-go's LeaseLock does; events) and the one Secret where cert-controller keeps the CA and
serving certificate. The chart creates that Secret, so no create; the binary lists and watches it
by name (fieldSelector metadata.name), so resourceNames hold for list and watch too.
*/}}
{{- define "jobset-addons.namespaceRules" -}}
{{- $rules := list
  (dict "apiGroups" (list "coordination.k8s.io") "resources" (list "leases") "verbs" (list "create"))
  (dict "apiGroups" (list "coordination.k8s.io") "resources" (list "leases") "resourceNames" (list (include "jobset-addons.leaderElectionID" .)) "verbs" (list "get" "update"))
  (dict "apiGroups" (list "" "events.k8s.io") "resources" (list "events") "verbs" (list "create" "patch"))
  (dict "apiGroups" (list "") "resources" (list "secrets") "resourceNames" (list (include "jobset-addons.certSecretName" .)) "verbs" (list "get" "list" "watch" "update")) }}
{{- toYaml $rules }}
{{- end }}

{{/*
Webhook configurations.

"jobset-addons.webhookConfigurations" renders, for one controller, a
MutatingWebhookConfiguration and/or a ValidatingWebhookConfiguration, both named
jobset-addons-<name> (the binary's --webhook-configuration-name), from that controller's entry in
"jobset-addons.webhooks" (templates/_webhooks.tpl). It renders nothing for a list that is empty.
Each webhook gets the controller's webhook Service as clientConfig, failurePolicy Fail (unless
its entry names another), sideEffects None (unless its entry names another) and admissionReviewVersions [v1]; in cert-manager mode the configuration is
annotated for cert-manager's CA injector, in self-signed mode the binary injects the CA itself.
A binary must declare the same kinds (addon.Options MutatingWebhooks / ValidatingWebhooks) so
that its cert-controller injects the CA into the configurations rendered here.
*/}}
{{- define "jobset-addons.webhookConfigurations" -}}
{{- $ctx := . }}
{{- $all := include "jobset-addons.webhooks" .root | fromYaml }}
{{- $mine := get $all .name | default dict }}
{{- range $kind := list "Mutating" "Validating" }}
{{- $hooks := get $mine (lower $kind) | default list }}
{{- if $hooks }}
---
apiVersion: admissionregistration.k8s.io/v1
kind: {{ $kind }}WebhookConfiguration
metadata:
  {{- include "jobset-addons.metadata" (merge (dict "clusterScoped" true) $ctx) | nindent 2 }}
  {{- if eq (include "jobset-addons.certMode" $ctx.root) "cert-manager" }}
  annotations:
    cert-manager.io/inject-ca-from: {{ $ctx.root.Release.Namespace }}/{{ include "jobset-addons.certificateName" $ctx }}
  {{- end }}
webhooks:
{{- range $hook := $hooks }}
  - name: {{ required "a webhook needs a name" (get $hook "name") }}
    admissionReviewVersions: ["v1"]
    clientConfig:
      service:
        name: {{ include "jobset-addons.webhookServiceName" $ctx }}
        namespace: {{ $ctx.root.Release.Namespace }}
        path: {{ required (printf "webhook %s needs a path" $hook.name) (get $hook "path") }}
        port: 443
    failurePolicy: {{ get $hook "failurePolicy" | default "Fail" }}
    sideEffects: {{ get $hook "sideEffects" | default "None" }}
    matchPolicy: Equivalent
    timeoutSeconds: {{ get $hook "timeoutSeconds" | default 10 }}
    {{- if and (eq $kind "Mutating") (get $hook "reinvocationPolicy") }}
    reinvocationPolicy: {{ get $hook "reinvocationPolicy" }}
    {{- end }}
    rules:
      {{- toYaml (required (printf "webhook %s needs rules" $hook.name) (get $hook "rules")) | nindent 6 }}
    {{- with get $hook "namespaceSelector" }}
    namespaceSelector:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    {{- with get $hook "objectSelector" }}
    objectSelector:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    {{- with get $hook "matchConditions" }}
    matchConditions:
      {{- toYaml . | nindent 6 }}
    {{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
