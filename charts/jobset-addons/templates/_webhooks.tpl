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
and the cert-manager CA annotation are added by the helper. No controller has a webhook yet.
*/}}
{{- define "jobset-addons.webhooks" -}}
volumeclaims:
  mutating: []
  validating: []
resourceclaims:
  mutating: []
  validating: []
sequencer:
  mutating: []
  validating: []
podgroups:
  mutating: []
  validating: []
{{- end }}
