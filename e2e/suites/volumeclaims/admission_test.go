package volumeclaims_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

const annotationPath = "metadata.annotations[volumeclaims.jobset-addons.io/policies]"

const pvcSpec = `spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}`

// tp is the path of the first template of the first policy.
const tp = annotationPath + "[0].templates[0]"

// withSpec is one shared policy of one template, data, of the PVC spec spec.
func withSpec(spec string) string {
	return `[{templates: [{metadata: {name: data}, spec: ` + spec + `}]}]`
}

// TestBadInputRefused: every bad policy is refused at admission, with the field path of each
// mistake, and nothing is created.
func TestBadInputRefused(t *testing.T) {
	cases := []struct {
		name, policies string
		edit           func(*jobsetv1alpha2.JobSet)
		wantPaths      []string
	}{
		{name: "not YAML", policies: `[{`, wantPaths: []string{annotationPath}},
		{name: "empty", policies: ` `, wantPaths: []string{annotationPath}},
		{name: "empty list", policies: `[]`, wantPaths: []string{annotationPath}},
		{name: "unknown field", policies: `[{templates: [{metadata: {name: data}, ` + pvcSpec + `}], retention: {}}]`, wantPaths: []string{annotationPath + "[0].retention"}},
		{name: "misspelt retention key", policies: `[{templates: [{metadata: {name: data}, ` + pvcSpec + `}], retentionPolicy: {whenFaild: Delete}}]`, wantPaths: []string{annotationPath + "[0].retentionPolicy.whenFaild"}},
		{name: "bad whenFailed", policies: `[{templates: [{metadata: {name: data}, ` + pvcSpec + `}], retentionPolicy: {whenFailed: Keep}}]`, wantPaths: []string{annotationPath + "[0].retentionPolicy.whenFailed"}},
		{name: "bad whenComplete", policies: `[{templates: [{metadata: {name: data}, ` + pvcSpec + `}], retentionPolicy: {whenComplete: delete}}]`, wantPaths: []string{annotationPath + "[0].retentionPolicy.whenComplete"}},
		{name: "bad whenDeleted", policies: `[{templates: [{metadata: {name: data}, ` + pvcSpec + `}], retentionPolicy: {whenDeleted: Never}}]`, wantPaths: []string{annotationPath + "[0].retentionPolicy.whenDeleted"}},
		{name: "bad finishedPods", policies: `[{templates: [{metadata: {name: data}, ` + pvcSpec + `}], retentionPolicy: {whenComplete: Delete, finishedPods: Evict}}]`, wantPaths: []string{annotationPath + "[0].retentionPolicy.finishedPods"}},
		{name: "finishedPods Delete with nothing deleted on finish", policies: `[{templates: [{metadata: {name: data}, ` + pvcSpec + `}], retentionPolicy: {finishedPods: Delete}}]`, wantPaths: []string{annotationPath + "[0].retentionPolicy.finishedPods"}},
		{name: "expireAfterUnused not a duration", policies: `[{templates: [{metadata: {name: data}, ` + pvcSpec + `}], retentionPolicy: {expireAfterUnused: 3days}}]`, wantPaths: []string{annotationPath + "[0].retentionPolicy.expireAfterUnused"}},
		{name: "expireAfterUnused with nothing retained", policies: `[{templates: [{metadata: {name: data}, ` + pvcSpec + `}], retentionPolicy: {whenComplete: Delete, whenFailed: Delete, expireAfterUnused: 1h}}]`, wantPaths: []string{annotationPath + "[0].retentionPolicy.expireAfterUnused"}},
		{name: "bad whenNodeLost", policies: `[{targetReplicatedJobs: [a], templates: [{metadata: {name: ckpt}, ` + pvcSpec + `}], retentionPolicy: {whenNodeLost: Delete}}]`, wantPaths: []string{annotationPath + "[0].retentionPolicy.whenNodeLost"}},
		{name: "whenNodeLost Recreate on a shared PVC", policies: `[{templates: [{metadata: {name: data}, ` + pvcSpec + `}], retentionPolicy: {whenNodeLost: Recreate}}]`, wantPaths: []string{annotationPath + "[0].retentionPolicy.whenNodeLost"}},
		{name: "bad nodeLostGracePeriod", policies: `[{targetReplicatedJobs: [a], templates: [{metadata: {name: ckpt}, ` + pvcSpec + `}], retentionPolicy: {nodeLostGracePeriod: soon}}]`, wantPaths: []string{annotationPath + "[0].retentionPolicy.nodeLostGracePeriod"}},
		{name: "nodeLostGracePeriod below the minimum", policies: `[{targetReplicatedJobs: [a], templates: [{metadata: {name: ckpt}, ` + pvcSpec + `}], retentionPolicy: {whenNodeLost: Recreate, nodeLostGracePeriod: 10s}}]`, wantPaths: []string{annotationPath + "[0].retentionPolicy.nodeLostGracePeriod"}},
		{name: "whenNodeUnreachable Recreate without whenNodeLost Recreate", policies: `[{targetReplicatedJobs: [a], templates: [{metadata: {name: ckpt}, ` + pvcSpec + `}], retentionPolicy: {whenNodeUnreachable: Recreate}}]`, wantPaths: []string{annotationPath + "[0].retentionPolicy.whenNodeUnreachable"}},
		{name: "retention not an object", policies: `[{templates: [{metadata: {name: data}, ` + pvcSpec + `}], retentionPolicy: Delete}]`, wantPaths: []string{annotationPath + "[0].retentionPolicy"}},
		{name: "templates not a list", policies: `[{templates: data}]`, wantPaths: []string{annotationPath + "[0].templates"}},
		{name: "targets not a list", policies: `[{targetReplicatedJobs: a, templates: [{metadata: {name: ckpt}, ` + pvcSpec + `}]}]`, wantPaths: []string{annotationPath + "[0].targetReplicatedJobs"}},
		{name: "template without a name", policies: `[{templates: [{` + pvcSpec + `}]}]`, wantPaths: []string{annotationPath + "[0].templates[0].metadata.name"}},
		{name: "name not a DNS label", policies: `[{templates: [{metadata: {name: Data_1}, ` + pvcSpec + `}]}]`, wantPaths: []string{annotationPath + "[0].templates[0].metadata.name"}},
		{name: "duplicate names across policies", policies: `[{templates: [{metadata: {name: data}, ` + pvcSpec + `}]}, {targetReplicatedJobs: [a], templates: [{metadata: {name: data}, ` + pvcSpec + `}]}]`, wantPaths: []string{annotationPath + "[1].templates[0].metadata.name"}},
		{name: "template with a namespace", policies: `[{templates: [{metadata: {name: data, namespace: other}, ` + pvcSpec + `}]}]`, wantPaths: []string{annotationPath + "[0].templates[0].metadata.namespace"}},
		{name: "no storage request", policies: `[{templates: [{metadata: {name: data}, spec: {accessModes: [ReadWriteOnce]}}]}]`, wantPaths: []string{annotationPath + "[0].templates[0].spec.resources.requests[storage]"}},
		{name: "bad quantity", policies: `[{templates: [{metadata: {name: data}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: lots}}}}]}]`, wantPaths: []string{annotationPath + "[0].templates[0].spec.resources.requests[storage]"}},
		{name: "unknown target", policies: `[{targetReplicatedJobs: [c], templates: [{metadata: {name: ckpt}, ` + pvcSpec + `}]}]`, wantPaths: []string{annotationPath + "[0].targetReplicatedJobs[0]"}},
		{name: "duplicate target", policies: `[{targetReplicatedJobs: [a, a], templates: [{metadata: {name: ckpt}, ` + pvcSpec + `}]}]`, wantPaths: []string{annotationPath + "[0].targetReplicatedJobs[1]"}},
		{name: "no volumeMount of that name", policies: `[{templates: [{metadata: {name: nothing}, ` + pvcSpec + `}]}]`, wantPaths: []string{annotationPath + "[0].templates[0].metadata.name"}},
		{name: "mounted only outside the targets", policies: `[{targetReplicatedJobs: [b], templates: [{metadata: {name: ckpt}, ` + pvcSpec + `}]}]`, wantPaths: []string{annotationPath + "[0].templates[0].metadata.name"}},
		{name: "clashes with a pod volume", policies: `[{templates: [{metadata: {name: data}, ` + pvcSpec + `}]}]`,
			edit: func(js *jobsetv1alpha2.JobSet) {
				spec := &js.Spec.ReplicatedJobs[1].Template.Spec.Template.Spec
				spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
			},
			wantPaths: []string{annotationPath + "[0].templates[0].metadata.name"}},
		{name: "target not Indexed", policies: `[{targetReplicatedJobs: [a], templates: [{metadata: {name: ckpt}, ` + pvcSpec + `}]}]`,
			edit: func(js *jobsetv1alpha2.JobSet) {
				js.Spec.ReplicatedJobs[0].Template.Spec.CompletionMode = ptr.To(batchv1.NonIndexedCompletion)
			},
			wantPaths: []string{annotationPath + "[0].targetReplicatedJobs[0]"}},
		// Refused by the API server, in a dry run of the PVC (admitted before issue 34).
		{name: "api: no access modes", policies: withSpec(`{resources: {requests: {storage: 1Gi}}}`), wantPaths: []string{tp + ".spec.accessModes"}},
		{name: "api: unknown access mode", policies: withSpec(`{accessModes: [ReadWriteSometimes], resources: {requests: {storage: 1Gi}}}`), wantPaths: []string{tp + ".spec.accessModes"}},
		{name: "api: ReadWriteOncePod with another mode", policies: withSpec(`{accessModes: [ReadWriteOncePod, ReadWriteOnce], resources: {requests: {storage: 1Gi}}}`), wantPaths: []string{tp + ".spec.accessModes"}},
		{name: "api: negative storage", policies: withSpec(`{accessModes: [ReadWriteOnce], resources: {requests: {storage: -1Gi}}}`), wantPaths: []string{tp + ".spec.resources[storage]"}},
		{name: "api: zero storage", policies: withSpec(`{accessModes: [ReadWriteOnce], resources: {requests: {storage: "0"}}}`), wantPaths: []string{tp + ".spec.resources[storage]"}},
		{name: "api: selector operator", policies: withSpec(`{accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}, selector: {matchExpressions: [{key: disk, operator: Near, values: [ssd]}]}}`), wantPaths: []string{tp + ".spec.selector.matchExpressions[0].operator"}},
		{name: "api: selector label value", policies: withSpec(`{accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}, selector: {matchLabels: {disk: "not a value"}}}`), wantPaths: []string{tp + ".spec.selector.matchLabels"}},
		{name: "api: storageClassName", policies: withSpec(`{accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}, storageClassName: Fast_SSD}`), wantPaths: []string{tp + ".spec.storageClassName"}},
		{name: "api: volumeMode", policies: withSpec(`{accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}, volumeMode: Raw2}`), wantPaths: []string{tp + ".spec.volumeMode"}},
		{name: "api: dataSource without a name", policies: withSpec(`{accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}, dataSource: {kind: PersistentVolumeClaim}}`), wantPaths: []string{tp + ".spec.dataSource.name"}},
		{name: "api: dataSource and dataSourceRef differ", policies: withSpec(`{accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}, dataSource: {kind: PersistentVolumeClaim, name: a}, dataSourceRef: {kind: PersistentVolumeClaim, name: b}}`), wantPaths: []string{tp + ".spec"}},
		{name: "api: volumeAttributesClassName", policies: withSpec(`{accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}, volumeAttributesClassName: Gold_Class}`), wantPaths: []string{tp + ".spec.volumeAttributesClassName"}},
		{name: "api: per-pod template, negative storage", policies: `[{targetReplicatedJobs: [a], templates: [{metadata: {name: ckpt}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: -5Mi}}}}]}]`, wantPaths: []string{tp + ".spec.resources[storage]"}},
		{name: "several mistakes at once", policies: `[{targetReplicatedJobs: [c], templates: [{metadata: {name: nothing}, ` + pvcSpec + `}], retentionPolicy: {whenFailed: Keep}}]`,
			wantPaths: []string{annotationPath + "[0].retentionPolicy.whenFailed", annotationPath + "[0].targetReplicatedJobs[0]"}},
	}
	f := features.New("bad policies are refused with their field paths").
		WithSetup("namespace", framework.Namespace)
	for _, tc := range cases {
		f = f.Assess(tc.name, func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := framework.Client(t, cfg)
			js := newJobSet(framework.NamespaceFrom(ctx), "bad", tc.policies, replicatedJob("a", 1, 2, "data", "ckpt"), replicatedJob("b", 1, 1, "data"))
			if tc.edit != nil {
				tc.edit(js)
			}
			// Not CreateRefused, which stops the feature: every bad input is tried.
			err := c.Create(ctx, js)
			if err == nil {
				_ = c.Delete(ctx, js)
				t.Errorf("admitted; want it refused at %q", tc.wantPaths)
				return ctx
			}
			paths, _ := framework.CausePaths(err)
			framework.ExpectCauses(t, js, err)
			for _, want := range tc.wantPaths {
				if !slices.Contains(paths, want) {
					t.Errorf("causes %q: want one at %s\n(error: %v)", paths, want, err)
				}
			}
			if !strings.Contains(err.Error(), "volumeclaims.jobset-addons.io/policies") {
				t.Errorf("the message does not name the annotation: %v", err)
			}
			return ctx
		})
	}
	testenv.Test(t, f.Teardown(framework.DeleteNamespace).Feature())
}

// TestPoliciesImmutable: the annotation can be neither changed, added nor removed by an update.
func TestPoliciesImmutable(t *testing.T) {
	valid := `[{templates: [{metadata: {name: data}, ` + pvcSpec + `}]}]`
	f := framework.NamespacedFeature("the policies annotation is immutable", "changes refused", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		js := newJobSet(ns, "fixed", valid, replicatedJob("a", 1, 1, "data"))
		delay(js, "1h")
		plain := newJobSet(ns, "plain", "", replicatedJob("a", 1, 1, "data"))
		delay(plain, "1h")
		framework.CreateAll(ctx, t, c, js, plain)
		for name, edit := range map[string]func() client.Object{
			"changed": func() client.Object {
				js.Annotations[contract.PoliciesAnnotationKey] = `[{templates: [{metadata: {name: data}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 2Gi}}}}]}]`
				return js
			},
			"removed": func() client.Object { delete(js.Annotations, contract.PoliciesAnnotationKey); return js },
			"added": func() client.Object {
				plain.Annotations = map[string]string{contract.PoliciesAnnotationKey: valid}
				return plain
			},
		} {
			// JobSet writes its status meanwhile: retry conflicts, which come before admission.
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				if err := c.Get(ctx, client.ObjectKeyFromObject(js), js); err != nil {
					return err
				}
				if err := c.Get(ctx, client.ObjectKeyFromObject(plain), plain); err != nil {
					return err
				}
				return c.Update(ctx, edit())
			})
			if err == nil || !strings.Contains(err.Error(), annotationPath) {
				t.Errorf("%s: update = %v, want refused at %s", name, err, annotationPath)
			}
		}
		return ctx
	})
	testenv.Test(t, f)
}
