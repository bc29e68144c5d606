{{/*
The admission webhooks of each controller, keyed by controller name, as
{mutating: [...], validating: [...]}. "jobset-addons.webhookConfigurations" (_helpers.tpl)
turns a controller's entry into its Mutating/ValidatingWebhookConfiguration named
jobset-addons-<name>; an empty list renders nothing. A feature that adds a webhook adds one
entry here, with only what is specific to it:

  volumeclaims:
    mutating:
      - name: mjobset.volumeclaims.jobset-addons.io      # required
        path: /mutate-jobset-x-k8s-io-v1alpha2-jobset     # required
        rules:                                            # required
          - apiGroups: ["jobset.x-k8s.io"]
            apiVersions: ["v1alpha2"]
            operations: ["CREATE"]
            resources: ["jobsets"]
        objectSelector: {...}         # optional; Pod and Job webhooks must have one
        namespaceSelector: {...}      # optional
        matchConditions: [...]        # optional
        timeoutSeconds: 10            # optional, default 10
        reinvocationPolicy: IfNeeded  # optional, mutating only

clientConfig (the controller's webhook Service, port 443), failurePolicy Fail, sideEffects None
and the cert-manager CA annotation are added by the helper.

JobSet webhooks are scoped with matchConditions: a CREATE reaches them when the JobSet uses the
add-on, an UPDATE only when it changes one of the add-on's own keys ("jobset-addons.ownKeys"
below), so that an add-on that is down stops nobody else's update of the same JobSet (another
add-on's records, Kueue's suspend and resume, the garbage collector's finalizers). Pod and Job
webhooks have an objectSelector on a scope label (the one the add-on's JobSet webhook wrote, or
upstream's jobset-name) and, where needed, matchConditions on the add-on's annotation: nothing
else ever reaches them.
*/}}

{{/*
The keys each add-on owns on a JobSet, as CEL, keyed by controller name:

  jobSetAnnotation  a predicate on k, the name of a JobSet annotation: the add-on's own
  replicatedJob     an expression of r, one of spec.replicatedJobs: what of it the add-on's
                    webhook reads on UPDATE (its template annotations, the pod-template keys
                    it polices, the sizes it checks), as a list; "jobset-addons.cel.value"
                    writes [value] for a key that is set and [] for one that is not

The records an add-on's controller writes on JobSets ("jobset-addons.records") are not among
them: a ValidatingAdmissionPolicy keeps them (templates/policies.yaml), and the controller's own
writes of them reach no webhook.
*/}}
{{- define "jobset-addons.ownKeys" -}}
volumeclaims:
  jobSetAnnotation: "k.startsWith('volumeclaims.jobset-addons.io/')"
resourceclaims:
  # The templates, and the pods a Job runs at once when it has templates (ElasticJobSet).
  replicatedJob: >-
    {{ include "jobset-addons.cel.value" (dict "meta" "r.template" "key" "resourceclaims.jobset-addons.io/templates") }} +
    (has(r.template.spec.parallelism) ? [r.template.spec.parallelism] : []) +
    (has(r.template.spec.completions) ? [r.template.spec.completions] : [])
sequencer:
  jobSetAnnotation: "k.startsWith('sequencer.jobset-addons.io/') && !(k in {{ include "jobset-addons.records" . | fromYaml | dig "sequencer" list | toJson | replace "\"" "'" }})"
  # depends-on, and the barrier-state no pod template may carry.
  replicatedJob: >-
    {{ include "jobset-addons.cel.value" (dict "meta" "r.template" "key" "sequencer.jobset-addons.io/depends-on") }} +
    {{ include "jobset-addons.cel.value" (dict "meta" "r.template.spec.template" "key" "sequencer.jobset-addons.io/barrier-state") }}
podgroups:
  jobSetAnnotation: "k.startsWith('podgroups.jobset-addons.io/') || k == 'scheduling.volcano.sh/queue-name'"
{{- end }}

{{/*
The records each add-on's controller writes on JobSets (users read them, never write them),
keyed by controller name. Only the add-on's ServiceAccount may set or change them on an UPDATE
(templates/policies.yaml); on CREATE its validating webhook refuses them.
*/}}
{{- define "jobset-addons.records" -}}
sequencer:
  - sequencer.jobset-addons.io/released
  - sequencer.jobset-addons.io/start-barrier-opened
{{- end }}

{{/* CEL: [the value of annotation .key of .meta.metadata] when set, [] when not. */}}
{{- define "jobset-addons.cel.value" -}}
(has({{ .meta }}.metadata) && has({{ .meta }}.metadata.annotations) && '{{ .key }}' in {{ .meta }}.metadata.annotations ? [{{ .meta }}.metadata.annotations['{{ .key }}']] : [])
{{- end }}

{{/*
CEL of the matchCondition "create-or-own-key-changed" of an add-on's JobSet webhooks (. is the
controller name; takes the root context as .root): true on CREATE (the webhook's other
conditions decide) and on an UPDATE that adds, removes or changes one of the add-on's own keys.
*/}}
{{- define "jobset-addons.ownKeyChanged" -}}
{{- $keys := get (include "jobset-addons.ownKeys" .root | fromYaml) .name }}
{{- $parts := list "request.operation == 'CREATE'" }}
{{- with $keys.jobSetAnnotation }}
{{- $parts = append $parts (printf "(has(object.metadata.annotations) && object.metadata.annotations.exists(k, (%s) && !(has(oldObject.metadata.annotations) && k in oldObject.metadata.annotations && oldObject.metadata.annotations[k] == object.metadata.annotations[k])))" .) }}
{{- $parts = append $parts (printf "(has(oldObject.metadata.annotations) && oldObject.metadata.annotations.exists(k, (%s) && !(has(object.metadata.annotations) && k in object.metadata.annotations)))" .) }}
{{- end }}
{{- with $keys.replicatedJob }}
{{- $parts = append $parts (printf "object.spec.replicatedJobs.map(r, %s) != oldObject.spec.replicatedJobs.map(r, %s)" . .) }}
{{- end }}
{{- join " || " $parts }}
{{- end }}
{{- define "jobset-addons.webhooks" -}}
volumeclaims:
  mutating:
    - name: mjobset.volumeclaims.jobset-addons.io
      path: /mutate-jobset-x-k8s-io-v1alpha2-jobset
      rules:
        - apiGroups: ["jobset.x-k8s.io"]
          apiVersions: ["v1alpha2"]
          operations: ["CREATE"]
          resources: ["jobsets"]
      matchConditions:
        - name: has-policies
          expression: "has(object.metadata.annotations) && 'volumeclaims.jobset-addons.io/policies' in object.metadata.annotations"
    - name: mpod.volumeclaims.jobset-addons.io
      path: /mutate--v1-pod
      timeoutSeconds: 5
      rules:
        - apiGroups: [""]
          apiVersions: ["v1"]
          operations: ["CREATE"]
          resources: ["pods"]
      objectSelector:
        matchLabels:
          volumeclaims.jobset-addons.io/per-pod: "true"
  validating:
    - name: vjobset.volumeclaims.jobset-addons.io
      path: /validate-jobset-x-k8s-io-v1alpha2-jobset
      rules:
        - apiGroups: ["jobset.x-k8s.io"]
          apiVersions: ["v1alpha2"]
          operations: ["CREATE", "UPDATE"]
          resources: ["jobsets"]
      matchConditions:
        - name: has-policies
          expression: "request.operation != 'CREATE' || (has(object.metadata.annotations) && 'volumeclaims.jobset-addons.io/policies' in object.metadata.annotations)"
        - name: create-or-own-key-changed
          expression: {{ include "jobset-addons.ownKeyChanged" (dict "root" . "name" "volumeclaims") | quote }}
resourceclaims:
  mutating:
    - name: mjob.resourceclaims.jobset-addons.io
      path: /mutate-batch-v1-job
      timeoutSeconds: 5
      rules:
        - apiGroups: ["batch"]
          apiVersions: ["v1"]
          operations: ["CREATE"]
          resources: ["jobs"]
      objectSelector:
        matchExpressions:
          - key: jobset.sigs.k8s.io/jobset-name
            operator: Exists
      matchConditions:
        - name: has-templates
          expression: "has(object.metadata.annotations) && 'resourceclaims.jobset-addons.io/templates' in object.metadata.annotations"
  validating:
    - name: vjobset.resourceclaims.jobset-addons.io
      path: /validate-jobset-x-k8s-io-v1alpha2-jobset
      rules:
        - apiGroups: ["jobset.x-k8s.io"]
          apiVersions: ["v1alpha2"]
          operations: ["CREATE", "UPDATE"]
          resources: ["jobsets"]
      matchConditions:
        - name: has-templates
          expression: "request.operation != 'CREATE' || object.spec.replicatedJobs.exists(r, has(r.template.metadata) && has(r.template.metadata.annotations) && 'resourceclaims.jobset-addons.io/templates' in r.template.metadata.annotations)"
        - name: create-or-own-key-changed
          expression: {{ include "jobset-addons.ownKeyChanged" (dict "root" . "name" "resourceclaims") | quote }}
sequencer:
  mutating:
    - name: mjobset.sequencer.jobset-addons.io
      path: /mutate-jobset-x-k8s-io-v1alpha2-jobset
      rules:
        - apiGroups: ["jobset.x-k8s.io"]
          apiVersions: ["v1alpha2"]
          operations: ["CREATE"]
          resources: ["jobsets"]
      matchConditions:
        - name: uses-sequencer
          expression: "(has(object.metadata.annotations) && ('sequencer.jobset-addons.io/execution-policy' in object.metadata.annotations || 'sequencer.jobset-addons.io/wait-for' in object.metadata.annotations || 'sequencer.jobset-addons.io/start-barrier' in object.metadata.annotations)) || (has(object.spec.replicatedJobs) && object.spec.replicatedJobs.exists(r, has(r.template.metadata) && has(r.template.metadata.annotations) && 'sequencer.jobset-addons.io/depends-on' in r.template.metadata.annotations))"
  validating:
    - name: vjobset.sequencer.jobset-addons.io
      path: /validate-jobset-x-k8s-io-v1alpha2-jobset
      rules:
        - apiGroups: ["jobset.x-k8s.io"]
          apiVersions: ["v1alpha2"]
          operations: ["CREATE", "UPDATE"]
          resources: ["jobsets"]
      matchConditions:
        - name: uses-sequencer
          expression: "request.operation != 'CREATE' || (has(object.metadata.annotations) && ('sequencer.jobset-addons.io/execution-policy' in object.metadata.annotations || 'sequencer.jobset-addons.io/wait-for' in object.metadata.annotations || 'sequencer.jobset-addons.io/start-barrier' in object.metadata.annotations)) || (has(object.spec.replicatedJobs) && object.spec.replicatedJobs.exists(r, has(r.template.metadata) && has(r.template.metadata.annotations) && 'sequencer.jobset-addons.io/depends-on' in r.template.metadata.annotations))"
        - name: create-or-own-key-changed
          expression: {{ include "jobset-addons.ownKeyChanged" (dict "root" . "name" "sequencer") | quote }}
podgroups:
  mutating:
    - name: mjob.podgroups.jobset-addons.io
      path: /mutate-batch-v1-job
      timeoutSeconds: 5
      rules:
        - apiGroups: ["batch"]
          apiVersions: ["v1"]
          operations: ["CREATE"]
          resources: ["jobs"]
      objectSelector:
        matchExpressions:
          - key: jobset.sigs.k8s.io/jobset-name
            operator: Exists
      matchConditions:
        - name: per-job-podgroup
          expression: "has(object.metadata.annotations) && 'podgroups.jobset-addons.io/per-job' in object.metadata.annotations"
    - name: mjobset.podgroups.jobset-addons.io
      path: /mutate-jobset-x-k8s-io-v1alpha2-jobset
      rules:
        - apiGroups: ["jobset.x-k8s.io"]
          apiVersions: ["v1alpha2"]
          operations: ["CREATE", "UPDATE"]
          resources: ["jobsets"]
      matchConditions:
        - name: uses-podgroups
          expression: "(has(object.metadata.annotations) && ('podgroups.jobset-addons.io/scheduler' in object.metadata.annotations || 'podgroups.jobset-addons.io/network-topology' in object.metadata.annotations || 'podgroups.jobset-addons.io/schedule-timeout-seconds' in object.metadata.annotations || 'podgroups.jobset-addons.io/topology-key' in object.metadata.annotations || 'podgroups.jobset-addons.io/composite' in object.metadata.annotations))"
        # UPDATE only for the kubernetes backend, and only an update that drops a pod template's
        # spec.schedulingGroup (Kueue v0.17.0 does, when it admits or evicts the JobSet): the
        # webhook puts it back. Any other update (Kueue's that keep it, the other add-ons', the
        # garbage collector's) never waits on podgroups.
        - name: create-or-drops-scheduling-group
          expression: "request.operation == 'CREATE' || (has(object.metadata.annotations) && 'podgroups.jobset-addons.io/scheduler' in object.metadata.annotations && object.metadata.annotations['podgroups.jobset-addons.io/scheduler'] == 'kubernetes' && object.spec.replicatedJobs.exists(r, !has(r.template.spec.template.spec.schedulingGroup) && oldObject.spec.replicatedJobs.exists(o, o.name == r.name && has(o.template.spec.template.spec.schedulingGroup))))"
  validating:
    - name: vjobset.podgroups.jobset-addons.io
      path: /validate-jobset-x-k8s-io-v1alpha2-jobset
      rules:
        - apiGroups: ["jobset.x-k8s.io"]
          apiVersions: ["v1alpha2"]
          operations: ["CREATE", "UPDATE"]
          resources: ["jobsets"]
      matchConditions:
        - name: uses-podgroups
          expression: "request.operation != 'CREATE' || (has(object.metadata.annotations) && ('podgroups.jobset-addons.io/scheduler' in object.metadata.annotations || 'podgroups.jobset-addons.io/network-topology' in object.metadata.annotations || 'podgroups.jobset-addons.io/schedule-timeout-seconds' in object.metadata.annotations || 'podgroups.jobset-addons.io/topology-key' in object.metadata.annotations || 'podgroups.jobset-addons.io/composite' in object.metadata.annotations))"
        - name: create-or-own-key-changed
          expression: {{ include "jobset-addons.ownKeyChanged" (dict "root" . "name" "podgroups") | quote }}
{{- end }}
