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
        failurePolicy: Ignore         # optional, default Fail; only where a pod may go on without the add-on
        sideEffects: NoneOnDryRun     # optional, default None; where the webhook makes objects (never on a dry run)
        reinvocationPolicy: IfNeeded  # optional, mutating only

clientConfig (the controller's webhook Service, port 443), failurePolicy (Fail unless set), sideEffects (None unless set)
and the cert-manager CA annotation are added by the helper.

JobSet webhooks are scoped with matchConditions: a CREATE reaches them when the JobSet uses the
add-on, an UPDATE only when it changes one of the add-on's own keys ("jobset-addons.ownKeys"
in _keys.tpl), so that an add-on that is down stops nobody else's update of the same JobSet (another
add-on's records, Kueue's suspend and resume, the garbage collector's finalizers). Pod and Job
webhooks have an objectSelector on a scope label (the one the add-on's JobSet webhook wrote, or
upstream's jobset-name) and, where needed, matchConditions on the add-on's label or annotation:
nothing else ever reaches them.
*/}}

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
      # A pod that comes before its PVC has the webhook make it, for the pod's JobSet (so that
      # no JobSet of a colliding name makes it first); never on a dry run.
      sideEffects: NoneOnDryRun
      rules:
        - apiGroups: [""]
          apiVersions: ["v1"]
          operations: ["CREATE"]
          resources: ["pods"]
      # The pods of a JobSet (upstream's jobset-name label) whose template gets per-pod PVCs (the
      # per-pod label, written by the JobSet webhook): the Pod webhook adds the per-pod volumes,
      # and denies a pod whose PVC is another JobSet's. Such a pod cannot run without it: Fail.
      objectSelector:
        matchExpressions:
          - key: jobset.sigs.k8s.io/jobset-name
            operator: Exists
      matchConditions:
        - name: per-pod
          expression: "has(object.metadata.labels) && 'volumeclaims.jobset-addons.io/per-pod' in object.metadata.labels && object.metadata.labels['volumeclaims.jobset-addons.io/per-pod'] == 'true'"
    - name: mpodshared.volumeclaims.jobset-addons.io
      path: /mutate--v1-pod
      timeoutSeconds: 5
      sideEffects: NoneOnDryRun
      # The other pods of a JobSet whose template mounts a shared PVC (the shared-volumes
      # annotation, written by the JobSet webhook): the Pod webhook changes nothing in them and
      # denies one whose shared PVC is another JobSet's (a name taken after admission). While
      # volumeclaims is down they go on as before it had this check (their PVC's name was
      # checked at admission): Ignore, so that one add-on down stops no running JobSet.
      failurePolicy: Ignore
      rules:
        - apiGroups: [""]
          apiVersions: ["v1"]
          operations: ["CREATE"]
          resources: ["pods"]
      objectSelector:
        matchExpressions:
          - key: jobset.sigs.k8s.io/jobset-name
            operator: Exists
      matchConditions:
        - name: shared-only
          expression: "has(object.metadata.annotations) && 'volumeclaims.jobset-addons.io/shared-volumes' in object.metadata.annotations && !(has(object.metadata.labels) && 'volumeclaims.jobset-addons.io/per-pod' in object.metadata.labels && object.metadata.labels['volumeclaims.jobset-addons.io/per-pod'] == 'true')"
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
      # A Job that comes before its claims has the webhook make them ahead of it, for its
      # JobSet (so that no JobSet of a colliding name makes one first); never on a dry run.
      sideEffects: NoneOnDryRun
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
      # A Job that comes before its gang object has the webhook make it ahead of it, for its
      # JobSet (so that no JobSet of a colliding name makes one first); never on a dry run.
      sideEffects: NoneOnDryRun
      rules:
        - apiGroups: ["batch"]
          apiVersions: ["v1"]
          operations: ["CREATE", "UPDATE"]
          resources: ["jobs"]
      objectSelector:
        matchExpressions:
          - key: jobset.sigs.k8s.io/jobset-name
            operator: Exists
      matchConditions:
        # Jobs of ReplicatedJobs podgroups gangs (its JobSet webhook marks them).
        - name: ganged
          expression: "has(object.metadata.annotations) && ('podgroups.jobset-addons.io/gang' in object.metadata.annotations || 'podgroups.jobset-addons.io/per-job' in object.metadata.annotations)"
        # UPDATE only for the one that resumes a suspended Job: a Job whose gang another JobSet
        # holds is held there too. Any other update never waits on podgroups.
        - name: create-or-resume
          expression: "request.operation == 'CREATE' || (has(oldObject.spec.suspend) && oldObject.spec.suspend && !(has(object.spec.suspend) && object.spec.suspend))"
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
