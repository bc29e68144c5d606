package webhook

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/volumeclaims"
)

// pvcsOf are the PVCs the reconciler makes for js, by name.
func pvcsOf(t *testing.T, js *jobsetv1alpha2.JobSet) map[string]*corev1.PersistentVolumeClaim {
	t.Helper()
	policies, _, errs := volumeclaims.Parse(js)
	claims, cerrs := volumeclaims.Claims(js, policies)
	if len(errs)+len(cerrs) > 0 {
		t.Fatalf("%v %v", errs, cerrs)
	}
	out := map[string]*corev1.PersistentVolumeClaim{}
	for _, c := range claims {
		out[c.Name] = c.PVC(js)
	}
	return out
}

// TestTakenAtAnyIndex: names are joined with "-", so JobSet gpt's eval-worker and JobSet
// gpt-eval's worker give the same per-pod PVC names. A PVC of gpt's at any index (not only
// the first, which the dry run looks at) refuses gpt-eval at the template's path, naming the
// PVC and gpt; PVCs left by an earlier gpt-eval for the same parts do not.
func TestTakenAtAnyIndex(t *testing.T) {
	jobSet := func(name, rj string, replicas int32) *jobsetv1alpha2.JobSet {
		return addontest.JobSet("default", name).UID("uid-" + name).
			VolumeClaimsPolicies(`[{targetReplicatedJobs: [` + rj + `], templates: [` + tmpl("ckpt") + `]}]`).
			ReplicatedJobs(addontest.ReplicatedJob(rj).Replicas(replicas).Mount("ckpt")).Obj()
	}
	gpt := pvcsOf(t, jobSet("gpt", "eval-worker", 3))
	earlier := pvcsOf(t, jobSet("gpt-eval", "worker", 3))
	for _, tc := range []struct {
		name     string
		existing []client.Object
		want     []fieldErr
		message  string
	}{
		{name: "none"},
		{name: "gpt's index 2", existing: []client.Object{gpt["ckpt-gpt-eval-worker-2-0"]},
			want:    []fieldErr{{field.ErrorTypeInvalid, pol + "[0].templates[0]"}},
			message: "the PersistentVolumeClaim ckpt-gpt-eval-worker-2-0 exists and was made for JobSet gpt (uid uid-gpt)"},
		{name: "gpt's index 1 and 2: told once", existing: []client.Object{gpt["ckpt-gpt-eval-worker-1-0"], gpt["ckpt-gpt-eval-worker-2-0"]},
			want:    []fieldErr{{field.ErrorTypeInvalid, pol + "[0].templates[0]"}},
			message: "the PersistentVolumeClaim ckpt-gpt-eval-worker-1-0 exists and was made for JobSet gpt (uid uid-gpt)"},
		{name: "an earlier gpt-eval's, retained", existing: []client.Object{earlier["ckpt-gpt-eval-worker-1-0"], earlier["ckpt-gpt-eval-worker-2-0"]}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &JobSetWebhook{Claims: fake.NewClientBuilder().WithObjects(tc.existing...).Build()}
			js := jobSet("gpt-eval", "worker", 3)
			js.UID = "uid-new"
			ctx := ctxFor(admissionv1.Create)
			if err := w.Default(ctx, js); err != nil {
				t.Fatal(err)
			}
			_, err := w.ValidateCreate(ctx, js)
			if diff := cmp.Diff(tc.want, causes(t, err)); diff != "" {
				t.Errorf("Errors (-want +got):\n%s\nerror: %v", diff, err)
			}
			if tc.message != "" && (err == nil || !strings.Contains(err.Error(), tc.message)) {
				t.Errorf("error %v does not say %q", err, tc.message)
			}
		})
	}
}
