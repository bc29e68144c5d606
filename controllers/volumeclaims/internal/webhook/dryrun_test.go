package webhook

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// dryRunHook is a JobSetWebhook whose dry runs go to a fake API server that answers each PVC
// by its template's storage class: the API server's refusal of a bad storage request, a quota
// exceeded, acceptance without the volumeAttributesClassName, or acceptance. It records the
// PVCs it was sent.
func dryRunHook(t *testing.T) (*JobSetWebhook, func() []*corev1.PersistentVolumeClaim) {
	var mu sync.Mutex
	var sent []*corev1.PersistentVolumeClaim
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Create: func(_ context.Context, _ client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			co := &client.CreateOptions{}
			co.ApplyOptions(opts)
			if len(co.DryRun) == 0 {
				t.Errorf("%s created for real", obj.GetName())
			}
			pvc := obj.(*corev1.PersistentVolumeClaim)
			mu.Lock()
			sent = append(sent, pvc.DeepCopy())
			mu.Unlock()
			switch pvc.Spec.StorageClassName {
			case nil:
				return nil
			}
			switch *pvc.Spec.StorageClassName {
			case "invalid":
				return apierrors.NewInvalid(schema.GroupKind{Kind: "PersistentVolumeClaim"}, pvc.Name, field.ErrorList{
					field.Invalid(field.NewPath("spec", "resources").Key("storage"), "-1Gi", "must be greater than zero"),
				})
			case "quota":
				return apierrors.NewForbidden(schema.GroupResource{Resource: "persistentvolumeclaims"}, pvc.Name, errors.New("exceeded quota: storage"))
			case "no-vac": // an API server whose VolumeAttributesClass gate is off
				return addontest.DropField(obj, "spec", "volumeAttributesClassName")
			}
			return nil
		},
	}).Build()
	return &JobSetWebhook{DryRun: &addon.DryRunner{Client: c, Name: "volumeclaims"}}, func() []*corev1.PersistentVolumeClaim {
		mu.Lock()
		defer mu.Unlock()
		return sent
	}
}

func classTmpl(name, class string) string {
	return `{metadata: {name: ` + name + `, labels: {team: a}}, spec: {storageClassName: ` + class + `, accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}`
}

// TestDryRuns: one dry run per template, of the PVC the reconciler makes first (its name,
// labels, owner); the API server's refusal comes back under the template's path, a quota
// exceeded as a Warning; a template with a problem of its own is not sent.
func TestDryRuns(t *testing.T) {
	w, sent := dryRunHook(t)
	js := addontest.JobSet("default", "train").UID("uid-1").VolumeClaimsPolicies(`[{templates: [` + classTmpl("shared", "fast") + `]}, {targetReplicatedJobs: [w], templates: [` +
		classTmpl("data", "invalid") + `, ` + classTmpl("scratch", "quota") + `, ` + classTmpl("gone", "fast") + `]}]`).
		ReplicatedJobs(addontest.ReplicatedJob("w").Replicas(3).Pods(4).Mount("shared", "data", "scratch")).Obj()
	ctx := ctxFor(admissionv1.Create)
	if err := w.Default(ctx, js); err != nil {
		t.Fatal(err)
	}
	warnings, err := w.ValidateCreate(ctx, js)
	wantErrs := []fieldErr{
		{field.ErrorTypeInvalid, pol + "[1].templates[2].metadata.name"}, // mounted by no target: not dry-run
		{field.ErrorTypeInvalid, pol + "[1].templates[0].spec.resources[storage]"},
	}
	if diff := cmp.Diff(wantErrs, causes(t, err)); diff != "" {
		t.Errorf("Errors (-want +got):\n%s\nerror: %v", diff, err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "the PersistentVolumeClaim scratch-train-w-0-0 of "+pol+"[1].templates[1] was not accepted by a dry run") {
		t.Errorf("warnings %q", warnings)
	}
	got := map[string]string{}
	for _, p := range sent() {
		got[p.Name] = p.Labels[contract.ManagedByLabelKey] + " " + p.Labels["team"] + " " + p.Namespace
		if len(p.OwnerReferences) != 1 || p.OwnerReferences[0].UID != js.UID {
			t.Errorf("%s owned by %v, want the JobSet", p.Name, p.OwnerReferences)
		}
	}
	want := map[string]string{
		"shared-train":        contract.VolumeClaimsManagedByValue + " a default",
		"data-train-w-0-0":    contract.VolumeClaimsManagedByValue + " a default",
		"scratch-train-w-0-0": contract.VolumeClaimsManagedByValue + " a default",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("dry runs (-want +got):\n%s", diff)
	}
}

// TestDryRunsAdmitted: a JobSet whose PVCs the API server accepts (or would, but for quota) is
// admitted; without a UID (a client's own dry run of the JobSet) the PVC has no owner.
func TestDryRunsAdmitted(t *testing.T) {
	w, sent := dryRunHook(t)
	js := addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{templates: [` + classTmpl("shared", "quota") + `]}]`).
		ReplicatedJobs(addontest.ReplicatedJob("w").Mount("shared")).Obj()
	ctx := ctxFor(admissionv1.Create)
	if err := w.Default(ctx, js); err != nil {
		t.Fatal(err)
	}
	warnings, err := w.ValidateCreate(ctx, js)
	if err != nil || len(warnings) != 1 {
		t.Errorf("ValidateCreate = %q, %v: want admitted with one Warning", warnings, err)
	}
	if s := sent(); len(s) != 1 || len(s[0].OwnerReferences) != 0 {
		t.Errorf("sent %d PVCs, the first owned by %v", len(s), s[0].OwnerReferences)
	}
}

// TestDryRunsDropped: a JobSet whose PVC the API server accepts without a field of its
// template is admitted with a Warning that names the field under the template's path.
func TestDryRunsDropped(t *testing.T) {
	w, _ := dryRunHook(t)
	tmpl := `{metadata: {name: shared}, spec: {storageClassName: no-vac, volumeAttributesClassName: gold, accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}`
	js := addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{templates: [` + tmpl + `]}]`).
		ReplicatedJobs(addontest.ReplicatedJob("w").Mount("shared")).Obj()
	ctx := ctxFor(admissionv1.Create)
	if err := w.Default(ctx, js); err != nil {
		t.Fatal(err)
	}
	warnings, err := w.ValidateCreate(ctx, js)
	want := "volumeclaims: the API server dropped spec.volumeAttributesClassName of the PersistentVolumeClaim shared-train (" + pol + "[0].templates[0].spec.volumeAttributesClassName): "
	if err != nil || len(warnings) != 1 || !strings.HasPrefix(warnings[0], want) {
		t.Errorf("ValidateCreate = %q, %v: want admitted with one Warning that starts %q", warnings, err, want)
	}
}
