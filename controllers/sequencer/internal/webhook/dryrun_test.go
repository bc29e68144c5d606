package webhook

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/sequencer"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestBarrierDryRuns: one pod per distinct barrier template, in the JobSet's namespace, with a
// generated name, the barrier container, and none of the add-ons' own labels (which scope their
// pod webhooks); none for a JobSet managed elsewhere.
func TestBarrierDryRuns(t *testing.T) {
	js := addontest.JobSet("team-a", "train").Annotation(contract.StartBarrierAnnotationKey, "JobSet").
		ReplicatedJobs(addontest.ReplicatedJob("a").PodLabel("app", "x"), addontest.ReplicatedJob("b").PodLabel("app", "x"),
			addontest.ReplicatedJob("c").PodLabel("app", "y")).Obj()
	js.Spec.ReplicatedJobs[0].Template.Spec.Template.Labels[contract.VolumeClaimsPerPodLabelKey] = contract.EnabledValue
	if errs := admitted(t, js); len(errs) > 0 {
		t.Fatal(errs)
	}
	var got []string
	for _, d := range sequencer.BarrierDryRuns(js) {
		pod := d.Object.(*corev1.Pod)
		if pod.Namespace != "team-a" || pod.GenerateName != sequencer.DryRunPodPrefix || pod.Name != "" {
			t.Errorf("pod %s/%s (generateName %q)", pod.Namespace, pod.Name, pod.GenerateName)
		}
		if !hasContainer(pod.Spec.InitContainers, contract.StartBarrierContainerName) {
			t.Errorf("%s: no barrier container", d.Path)
		}
		got = append(got, d.Path.String()+" "+cmp.Diff(nil, pod.Labels))
	}
	// a and b differ only by the add-ons' labels (the per-pod scope label of a): one dry run.
	want := []string{
		"spec.replicatedJobs[0].template.spec.template " + cmp.Diff(nil, map[string]string{"app": "x"}),
		"spec.replicatedJobs[2].template.spec.template " + cmp.Diff(nil, map[string]string{"app": "y"}),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("dry runs (-want +got):\n%s", diff)
	}
	js.Spec.ManagedBy = ptr.To("kueue.x-k8s.io/multikueue")
	if d := sequencer.BarrierDryRuns(js); len(d) != 0 {
		t.Errorf("%d dry runs of a JobSet managed elsewhere", len(d))
	}
}

// TestBarrierDryRunStandInVolumes: a mount whose volume others add after admission (upstream
// JobSet's volumeClaimPolicies, as Kubeflow Trainer's runtimes with initializers use it) gets a
// stand-in volume in the dry-run pod, so the API server does not refuse a pod the real one is not;
// a volume the template has is left as it is.
func TestBarrierDryRunStandInVolumes(t *testing.T) {
	js := addontest.JobSet("team-a", "train").Annotation(contract.StartBarrierAnnotationKey, "JobSet").
		ReplicatedJobs(addontest.ReplicatedJob("node")).Obj()
	spec := &js.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec
	spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "initializer", MountPath: "/workspace"}, {Name: "own", MountPath: "/own"}}
	spec.Volumes = []corev1.Volume{{Name: "own", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/x"}}}}
	if errs := admitted(t, js); len(errs) > 0 {
		t.Fatal(errs)
	}
	runs := sequencer.BarrierDryRuns(js)
	if len(runs) != 1 {
		t.Fatalf("%d dry runs, want 1", len(runs))
	}
	got := map[string]string{}
	for _, v := range runs[0].Object.(*corev1.Pod).Spec.Volumes {
		switch {
		case v.EmptyDir != nil:
			got[v.Name] = "emptyDir"
		case v.HostPath != nil:
			got[v.Name] = "hostPath"
		case v.DownwardAPI != nil:
			got[v.Name] = "downwardAPI"
		}
	}
	want := map[string]string{"initializer": "emptyDir", "own": "hostPath", contract.StartBarrierContainerName: "downwardAPI"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("volumes of the dry-run pod (-want +got):\n%s", diff)
	}
	if len(spec.Volumes) != 2 {
		t.Errorf("the JobSet's own template changed: %d volumes", len(spec.Volumes))
	}
}

func hasContainer(cs []corev1.Container, name string) bool {
	for _, c := range cs {
		if c.Name == name {
			return true
		}
	}
	return false
}

// TestBarrierDryRunVerdicts: the API server's answer to the dry run of a barrier pod, turned
// into the webhook's (a fake client answers as the API server would; what the real one answers
// is e2e/suites/sequencer). A refusal for good (422) refuses the JobSet naming the field under
// the pod template; a Forbidden (quota, LimitRange, Pod Security) and a failure are Warnings
// naming the barrier container and the cause.
func TestBarrierDryRunVerdicts(t *testing.T) {
	podGK := schema.GroupKind{Kind: "Pod"}
	cases := map[string]struct {
		err          error
		wantErrs     []fieldErr
		wantWarnings int
	}{
		"accepted": {},
		"invalid": {
			err:      apierrors.NewInvalid(podGK, "x", field.ErrorList{field.Invalid(field.NewPath("spec", "containers").Index(0).Child("resources", "requests"), "2", "must be less than or equal to cpu limit of 1")}),
			wantErrs: []fieldErr{fe(field.ErrorTypeInvalid, "spec.replicatedJobs[0].template.spec.template.spec.containers[0].resources.requests")},
		},
		"LimitRange": {
			err:          apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "x", errString("minimum cpu usage per Container is 100m, but request is 10m")),
			wantWarnings: 1,
		},
		"transport": {err: errString("connection refused"), wantWarnings: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
				Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error { return tc.err },
			}).Build()
			w := &JobSetWebhook{Barrier: testBarrier, DryRun: &addon.DryRunner{Client: c, Name: "sequencer"}}
			js := addontest.JobSet("ns", "a").Annotation(contract.StartBarrierAnnotationKey, "JobSet").ReplicatedJobs(addontest.ReplicatedJob("x")).Obj()
			if err := w.Default(context.Background(), js); err != nil {
				t.Fatal(err)
			}
			warnings, err := w.ValidateCreate(context.Background(), js)
			var got []fieldErr
			if err != nil {
				got = errsOf(statusCauses(t, err))
			}
			if diff := cmp.Diff(tc.wantErrs, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if len(warnings) != tc.wantWarnings {
				t.Fatalf("warnings %q, want %d", warnings, tc.wantWarnings)
			}
			for _, w := range warnings {
				if !contains(w, contract.StartBarrierContainerName) || !contains(w, tc.err.Error()) {
					t.Errorf("warning %q names neither the barrier container nor the cause", w)
				}
			}
		})
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// statusCauses are the causes of the refusal err, as field errors.
func statusCauses(t *testing.T, err error) field.ErrorList {
	t.Helper()
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		t.Fatalf("not a refusal with causes: %v", err)
	}
	var out field.ErrorList
	for _, c := range status.Status().Details.Causes {
		out = append(out, &field.Error{Type: field.ErrorType(c.Type), Field: c.Field})
	}
	return out
}
