package contract

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KEP-572 story 3, as the annotation value.
const story3Policies = `
# Shared volumes for dataset and results
- targetReplicatedJobs: [] # All jobs
  templates:
  - metadata:
      name: dataset-cache
    spec:
      accessModes: ["ReadWriteMany"]
      resources:
        requests:
          storage: 500Gi
      storageClassName: shared-storage
  - metadata:
      name: results-storage
      labels:
        content-type: results
    spec:
      accessModes: ["ReadWriteMany"]
      resources:
        requests:
          storage: 100Gi
  retentionPolicy:
    whenComplete: Delete
# Per-job scratch space for data-loader and trainer
- targetReplicatedJobs: ["data-loader", "trainer"]
  templates:
  - metadata:
      name: worker-scratch
    spec:
      accessModes: ["ReadWriteOnce"]
      resources:
        requests:
          storage: 20Gi
  retentionPolicy:
    whenComplete: Retain
    whenFailed: Delete
    whenDeleted: Retain
    finishedPods: Delete
`

func TestParseVolumeClaimPolicies(t *testing.T) {
	results := pvcTemplate("results-storage", "100Gi", corev1.ReadWriteMany)
	results.Labels = map[string]string{"content-type": "results"}
	dataset := pvcTemplate("dataset-cache", "500Gi", corev1.ReadWriteMany)
	dataset.Spec.StorageClassName = ptrTo("shared-storage")

	cases := map[string]struct {
		value      string
		want       []VolumeClaimPolicy
		wantShared []bool
	}{
		"KEP-572 story 3, YAML, defaults filled in": {
			value: story3Policies,
			want: []VolumeClaimPolicy{
				{
					Templates: []corev1.PersistentVolumeClaim{dataset, results},
					RetentionPolicy: VolumeRetentionPolicy{
						WhenComplete: RetentionPolicyDelete,
						WhenFailed:   RetentionPolicyRetain,
						WhenDeleted:  RetentionPolicyDelete,
						FinishedPods: RetentionPolicyRetain,
						WhenNodeLost: NodeLostKeep, WhenNodeUnreachable: NodeLostKeep, NodeLostGracePeriod: defaultGrace(),
					},
				},
				{
					TargetReplicatedJobs: []string{"data-loader", "trainer"},
					Templates:            []corev1.PersistentVolumeClaim{pvcTemplate("worker-scratch", "20Gi", corev1.ReadWriteOnce)},
					RetentionPolicy: VolumeRetentionPolicy{
						WhenComplete: RetentionPolicyRetain,
						WhenFailed:   RetentionPolicyDelete,
						WhenDeleted:  RetentionPolicyRetain,
						FinishedPods: RetentionPolicyDelete,
						WhenNodeLost: NodeLostKeep, WhenNodeUnreachable: NodeLostKeep, NodeLostGracePeriod: defaultGrace(),
					},
				},
			},
			wantShared: []bool{true, false},
		},
		"JSON, no retention policy: all defaults": {
			value: `[{"targetReplicatedJobs":["node"],"templates":[{"apiVersion":"v1","kind":"PersistentVolumeClaim",` +
				`"metadata":{"name":"checkpoint-storage"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"100Gi"}}}}]}]`,
			want: []VolumeClaimPolicy{{
				TargetReplicatedJobs: []string{"node"},
				Templates: []corev1.PersistentVolumeClaim{func() corev1.PersistentVolumeClaim {
					p := pvcTemplate("checkpoint-storage", "100Gi", corev1.ReadWriteOnce)
					p.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"}
					return p
				}()},
				RetentionPolicy: VolumeRetentionPolicy{
					WhenComplete: DefaultVolumeWhenComplete,
					WhenFailed:   DefaultVolumeWhenFailed,
					WhenDeleted:  DefaultVolumeWhenDeleted,
					FinishedPods: DefaultVolumeFinishedPods,
					WhenNodeLost: DefaultVolumeWhenNodeLost, WhenNodeUnreachable: DefaultVolumeWhenNodeUnreachable, NodeLostGracePeriod: defaultGrace(),
				},
			}},
			wantShared: []bool{false},
		},
		"null retention policy and a numeric quantity": {
			value: "- templates:\n  - metadata: {name: data}\n    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1073741824}}}\n  retentionPolicy: null\n",
			want: []VolumeClaimPolicy{{
				Templates: []corev1.PersistentVolumeClaim{{
					ObjectMeta: metav1.ObjectMeta{Name: "data"},
					Spec: corev1.PersistentVolumeClaimSpec{
						AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
						Resources: corev1.VolumeResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
						},
					},
				}},
				RetentionPolicy: VolumeRetentionPolicy{WhenComplete: "Retain", WhenFailed: "Retain", WhenDeleted: "Delete", FinishedPods: "Retain",
					WhenNodeLost: "Keep", WhenNodeUnreachable: "Keep", NodeLostGracePeriod: defaultGrace()},
			}},
			wantShared: []bool{true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, errs := ParseVolumeClaimPolicies(tc.value, JobSetAnnotationPath(PoliciesAnnotationKey))
			if len(errs) > 0 {
				t.Fatalf("unexpected errors: %v", errs.ToAggregate())
			}
			if diff := cmp.Diff(tc.want, got, cmpOpts...); diff != "" {
				t.Errorf("policies (-want +got):\n%s", diff)
			}
			var shared []bool
			for _, p := range got {
				shared = append(shared, p.Shared())
			}
			if diff := cmp.Diff(tc.wantShared, shared); diff != "" {
				t.Errorf("Shared() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVolumeClaimPolicyTargets(t *testing.T) {
	shared := VolumeClaimPolicy{}
	targeted := VolumeClaimPolicy{TargetReplicatedJobs: []string{"data-loader", "trainer"}}
	cases := map[string]struct {
		policy        VolumeClaimPolicy
		replicatedJob string
		want          bool
	}{
		"shared targets any":           {shared, "evaluator", true},
		"targeted targets a listed":    {targeted, "trainer", true},
		"targeted skips an unlisted":   {targeted, "evaluator", false},
		"targeted is case-sensitive":   {targeted, "Trainer", false},
		"shared targets the empty one": {shared, "", true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.policy.Targets(tc.replicatedJob); got != tc.want {
				t.Errorf("Targets(%q) = %v, want %v", tc.replicatedJob, got, tc.want)
			}
		})
	}
	if diff := cmp.Diff([]string{"a", "b"}, VolumeClaimPolicy{Templates: []corev1.PersistentVolumeClaim{
		{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, {ObjectMeta: metav1.ObjectMeta{Name: "b"}},
	}}.TemplateNames()); diff != "" {
		t.Errorf("TemplateNames() (-want +got):\n%s", diff)
	}
}
