package webhook

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// MultiKueue copies a JobSet from the manager cluster to a worker with its labels, annotations
// and spec as they are, spec.managedBy cleared (Kueue v0.19.2, jobset_multikueue_adapter.go).
// Where the manager's webhook defaulted the JobSet before Kueue's set spec.managedBy (webhook
// configurations run in name order), the copy arrives defaulted: the worker's webhook must admit
// it and leave it as a JobSet created in the worker gets it.
func TestDefaultedCopy(t *testing.T) {
	w := &JobSetWebhook{}
	created := addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{templates: [` + tmpl("data") + `]}, {targetReplicatedJobs: [w], templates: [` + tmpl("ckpt") + `]}]`).
		ReplicatedJobs(addontest.ReplicatedJob("w").Replicas(2).Pods(2).Mount("data", "ckpt")).Obj()
	if err := w.Default(ctxFor(admissionv1.Create), created); err != nil {
		t.Fatal(err)
	}
	if created.Annotations[contract.VolumeClaimsAdmittedAnnotationKey] != contract.EnabledValue {
		t.Fatal("the webhook injected nothing: the test proves nothing")
	}
	inManager := created.DeepCopy()
	inManager.Spec.ManagedBy = ptr.To("kueue.x-k8s.io/multikueue")
	copied := &jobsetv1alpha2.JobSet{ObjectMeta: *inManager.ObjectMeta.DeepCopy(), Spec: *inManager.Spec.DeepCopy()}
	copied.Spec.ManagedBy = nil
	if err := w.Default(ctxFor(admissionv1.Create), copied); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(created, copied); diff != "" {
		t.Errorf("the worker's webhook on the defaulted copy (-as created in the worker +copy):\n%s", diff)
	}
	if _, err := w.ValidateCreate(ctxFor(admissionv1.Create), copied); err != nil {
		t.Errorf("the defaulted copy is refused: %v", err)
	}
}
