{{/*
Test fixture, not part of the chart: hack/chart-verify.sh copies the chart, puts this file in
place of templates/_webhooks.tpl and checks what "jobset-addons.webhookConfigurations" renders
from it (tests/main.go, check-webhooks). volumeclaims has a mutating and a validating webhook,
sequencer a validating one only, the others none; the Pod webhook declares side effects.
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
      objectSelector:
        matchExpressions:
          - key: volumeclaims.jobset-addons.io/enabled
            operator: Exists
      reinvocationPolicy: IfNeeded
    - name: mpod.volumeclaims.jobset-addons.io
      path: /mutate--v1-pod
      timeoutSeconds: 5
      sideEffects: NoneOnDryRun
      rules:
        - apiGroups: [""]
          apiVersions: ["v1"]
          operations: ["CREATE"]
          resources: ["pods"]
      objectSelector:
        matchLabels:
          volumeclaims.jobset-addons.io/managed: "true"
      matchConditions:
        - name: indexed
          expression: "has(object.metadata.annotations) && 'batch.kubernetes.io/job-completion-index' in object.metadata.annotations"
  validating:
    - name: vjobset.volumeclaims.jobset-addons.io
      path: /validate-jobset-x-k8s-io-v1alpha2-jobset
      rules:
        - apiGroups: ["jobset.x-k8s.io"]
          apiVersions: ["v1alpha2"]
          operations: ["CREATE", "UPDATE"]
          resources: ["jobsets"]
resourceclaims:
  mutating: []
  validating: []
sequencer:
  mutating: []
  validating:
    - name: vjobset.sequencer.jobset-addons.io
      path: /validate-jobset-x-k8s-io-v1alpha2-jobset
      namespaceSelector:
        matchExpressions:
          - key: kubernetes.io/metadata.name
            operator: NotIn
            values: ["kube-system"]
      rules:
        - apiGroups: ["jobset.x-k8s.io"]
          apiVersions: ["v1alpha2"]
          operations: ["CREATE", "UPDATE"]
          resources: ["jobsets"]
podgroups: {}
{{- end }}
