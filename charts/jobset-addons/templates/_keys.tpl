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

{{/*
The kinds each add-on makes, as resourceRules (apiGroups, resources), keyed by controller name:
on these, the add-on's reserved keys (templates/policies.yaml, admissionPolicies.reservedKeys)
are written by its ServiceAccount alone.
*/}}
{{- define "jobset-addons.madeObjects" -}}
volumeclaims:
  - apiGroups: [""]
    resources: ["persistentvolumeclaims"]
resourceclaims:
  - apiGroups: ["resource.k8s.io"]
    resources: ["resourceclaims"]
podgroups:
  - apiGroups: ["scheduling.volcano.sh", "scheduling.x-k8s.io", "scheduling.run.ai"]
    resources: ["podgroups"]
  - apiGroups: ["scheduling.k8s.io"]
    resources: ["workloads", "podgroups", "compositepodgroups"]
{{- end }}
