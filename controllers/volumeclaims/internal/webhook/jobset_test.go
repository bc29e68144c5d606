package webhook

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/volumeclaims"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// fieldErr is what a test asserts of one field error: its type and path.
type fieldErr struct {
	Type  field.ErrorType
	Field string
}

var (
	pol    = volumeclaims.AnnotationPath.String()
	marker = contract.JobSetAnnotationPath(contract.VolumeClaimsAdmittedAnnotationKey).String()
)

// tmpl is a minimal valid PVC template named name, in YAML flow style.
func tmpl(name string) string {
	return `{metadata: {name: ` + name + `}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}`
}

func ctxFor(op admissionv1.Operation) context.Context {
	return admission.NewContextWithRequest(context.Background(),
		admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: op}})
}

// causes turns the error of a validating method into the (type, field) of each cause of the
// API status it becomes, checking that it is a 422 Invalid for a JobSet.
func causes(t *testing.T, err error) []fieldErr {
	t.Helper()
	if err == nil {
		return nil
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		t.Fatalf("Error %v is not an API status", err)
	}
	s := status.Status()
	if s.Code != http.StatusUnprocessableEntity || s.Reason != "Invalid" || s.Details == nil ||
		s.Details.Group != "jobset.x-k8s.io" || s.Details.Kind != "JobSet" {
		t.Errorf("Status is %d %s %+v, want 422 Invalid of a jobset.x-k8s.io JobSet", s.Code, s.Reason, s.Details)
	}
	var got []fieldErr
	for _, c := range s.Details.Causes {
		if c.Message == "" {
			t.Errorf("Cause at %s has no message", c.Field)
		}
		got = append(got, fieldErr{Type: field.ErrorType(c.Type), Field: c.Field})
	}
	return got
}

// admitCreate runs what the API server runs on CREATE: the mutating webhook, then (once the
// name is generated) the validating webhook.
func admitCreate(t *testing.T, js *jobsetv1alpha2.JobSet, generatedName string) error {
	t.Helper()
	w := &JobSetWebhook{}
	ctx := ctxFor(admissionv1.Create)
	if err := w.Default(ctx, js); err != nil {
		t.Fatalf("Default: %v", err)
	}
	if generatedName != "" {
		js.Name = generatedName
	}
	warnings, err := w.ValidateCreate(ctx, js)
	if err != nil && len(warnings) != 0 {
		t.Errorf("ValidateCreate refused and warned: %v", warnings)
	}
	return err
}

func TestRetentionWarnings(t *testing.T) {
	shared := func(retention string) string {
		return "[{templates: [{metadata: {name: data}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}], retentionPolicy: " + retention + "}]"
	}
	perPodPolicies := func(retention string) string {
		return "[{targetReplicatedJobs: [w], templates: [{metadata: {name: data}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}], retentionPolicy: " + retention + "}]"
	}
	twoJobs := func(policies string) *addontest.JobSetWrapper {
		return addontest.JobSet("default", "train").VolumeClaimsPolicies(policies).
			ReplicatedJobs(addontest.ReplicatedJob("w").Mount("data"), addontest.ReplicatedJob("v").Mount("data"))
	}
	path := "metadata.annotations[volumeclaims.jobset-addons.io/policies][0].retentionPolicy: "
	cases := map[string]struct {
		js   *jobsetv1alpha2.JobSet
		want string // the start of the one warning, or "" for none
	}{
		"Retain: none":                        {js: twoJobs(shared("{whenComplete: Retain}")).Obj()},
		"shared, whenComplete Delete, no TTL": {js: twoJobs(shared("{whenComplete: Delete}")).Obj(), want: path + "the PVCs it deletes stay Terminating"},
		"shared, whenFailed Delete, no TTL":   {js: twoJobs(shared("{whenFailed: Delete}")).Obj(), want: path + "the PVCs it deletes stay Terminating"},
		"shared, Delete, finishedPods Delete": {js: twoJobs(shared("{whenComplete: Delete, finishedPods: Delete}")).Obj()},
		"shared, Delete, with a TTL":          {js: withTTL(twoJobs(shared("{whenComplete: Delete}")).Obj())},
		"per-pod of one of two, with a TTL":   {js: withTTL(twoJobs(perPodPolicies("{whenComplete: Delete}")).Obj()), want: path + "the per-pod PVCs it deletes when their ReplicatedJobs finish"},
		"per-pod of one of two, finishedPods": {js: withTTL(twoJobs(perPodPolicies("{whenComplete: Delete, finishedPods: Delete}")).Obj())},
		"per-pod of the only one, with a TTL": {js: withTTL(addontest.JobSet("default", "train").VolumeClaimsPolicies(perPodPolicies("{whenComplete: Delete}")).
			ReplicatedJobs(addontest.ReplicatedJob("w").Mount("data")).Obj())},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := &JobSetWebhook{}
			ctx := ctxFor(admissionv1.Create)
			if err := w.Default(ctx, tc.js); err != nil {
				t.Fatal(err)
			}
			warnings, err := w.ValidateCreate(ctx, tc.js)
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			switch {
			case tc.want == "" && len(warnings) != 0:
				t.Errorf("warnings %q, want none", warnings)
			case tc.want != "" && (len(warnings) != 1 || !strings.HasPrefix(warnings[0], tc.want)):
				t.Errorf("warnings %q, want one starting with %q", warnings, tc.want)
			}
		})
	}
}

func withTTL(js *jobsetv1alpha2.JobSet) *jobsetv1alpha2.JobSet {
	js.Spec.TTLSecondsAfterFinished = ptr.To[int32](60)
	return js
}

func TestValidateCreate(t *testing.T) {
	long := strings.Repeat("a", 241) // with "-twelve-chars", 254 characters
	cases := map[string]struct {
		js            *jobsetv1alpha2.JobSet
		generatedName string // set between mutation and validation, as the API server does
		wantErrs      []fieldErr
	}{
		// Valid.
		"story 1: per-pod checkpoints of node":                 {js: story1().Obj()},
		"story 2: one PVC shared by 3 ReplicatedJobs":          {js: story2().Obj()},
		"story 3: shared and per-pod PVCs together":            {js: story3().Obj()},
		"story 4: per-pod node-local storage in namespace hpc": {js: story4().Obj()},
		"no policies annotation": {
			js: addontest.JobSet("default", "plain").ReplicatedJobs(addontest.ReplicatedJob("worker").CompletionMode(nil).EmptyDir("data")).Obj(),
		},
		"policies in JSON": {
			js: addontest.JobSet("default", "train").
				VolumeClaimsPolicies(`[{"targetReplicatedJobs":["worker"],"templates":[{"metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}]}]`).
				ReplicatedJobs(addontest.ReplicatedJob("worker").Mount("data")).Obj(),
		},
		"mounted only by an init container": {
			js: addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{targetReplicatedJobs: [worker], templates: [` + tmpl("data") + `]}]`).
				ReplicatedJobs(addontest.ReplicatedJob("worker").InitMount("data")).Obj(),
		},
		"per-pod template mounted by one of two targets": {
			js: addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{targetReplicatedJobs: [a, b], templates: [`+tmpl("data")+`]}]`).
				ReplicatedJobs(addontest.ReplicatedJob("a").Mount("data"), addontest.ReplicatedJob("b")).Obj(),
		},
		"shared template mounted by one ReplicatedJob of two": {
			js: addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{templates: [`+tmpl("data")+`]}]`).
				ReplicatedJobs(addontest.ReplicatedJob("a").Mount("data"), addontest.ReplicatedJob("b").EmptyDir("other")).Obj(),
		},
		"shared volume already there with the claim the webhook would inject": {
			js: addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{templates: [` + tmpl("data") + `]}]`).
				ReplicatedJobs(addontest.ReplicatedJob("a").Mount("data").ClaimVolume("data", "data-train")).Obj(),
		},
		"shared template in a NonIndexed ReplicatedJob": {
			js: addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{templates: [` + tmpl("data") + `]}]`).
				ReplicatedJobs(addontest.ReplicatedJob("a").CompletionMode(ptr.To(batchv1.NonIndexedCompletion)).Mount("data")).Obj(),
		},
		"names and generateName both set": {
			js: func() *jobsetv1alpha2.JobSet {
				js := addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{templates: [` + tmpl("data") + `]}]`).
					ReplicatedJobs(addontest.ReplicatedJob("a").Mount("data")).Obj()
				js.GenerateName = "train-"
				return js
			}(),
		},
		"longest per-pod name is 253 characters": {
			// data-<js>-w-9-9: 5 + len(js) + 6 = 253.
			js: addontest.JobSet("default", strings.Repeat("a", 242)).VolumeClaimsPolicies(`[{targetReplicatedJobs: [w], templates: [` + tmpl("data") + `]}]`).
				ReplicatedJobs(addontest.ReplicatedJob("w").Replicas(10).Pods(10).Mount("data")).Obj(),
		},

		// Refused by the parser.
		"not YAML or JSON": {
			js:       addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{`).ReplicatedJobs(addontest.ReplicatedJob("a")).Obj(),
			wantErrs: []fieldErr{{field.ErrorTypeInvalid, pol}},
		},
		"empty list": {
			js:       addontest.JobSet("default", "train").VolumeClaimsPolicies(`[]`).ReplicatedJobs(addontest.ReplicatedJob("a")).Obj(),
			wantErrs: []fieldErr{{field.ErrorTypeRequired, pol}},
		},
		"unknown field of a policy": {
			js: addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{targets: [a], templates: [` + tmpl("data") + `]}]`).
				ReplicatedJobs(addontest.ReplicatedJob("a").Mount("data")).Obj(),
			wantErrs: []fieldErr{{field.ErrorTypeNotSupported, pol + "[0].targets"}},
		},
		"targets not a list": {
			js: addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{targetReplicatedJobs: a, templates: [` + tmpl("data") + `]}]`).
				ReplicatedJobs(addontest.ReplicatedJob("a").Mount("data")).Obj(),
			wantErrs: []fieldErr{{field.ErrorTypeTypeInvalid, pol + "[0].targetReplicatedJobs"}},
		},
		"no templates": {
			js:       addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{targetReplicatedJobs: [a]}]`).ReplicatedJobs(addontest.ReplicatedJob("a")).Obj(),
			wantErrs: []fieldErr{{field.ErrorTypeRequired, pol + "[0].templates"}},
		},
		"template without a name": {
			js: addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{templates: [{spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}]}]`).
				ReplicatedJobs(addontest.ReplicatedJob("a").Mount("data")).Obj(),
			wantErrs: []fieldErr{{field.ErrorTypeRequired, pol + "[0].templates[0].metadata.name"}},
		},
		"template name not a DNS label": {
			js: addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{templates: [` + tmpl("Data_1") + `]}]`).
				ReplicatedJobs(addontest.ReplicatedJob("a").Mount("Data_1")).Obj(),
			wantErrs: []fieldErr{{field.ErrorTypeInvalid, pol + "[0].templates[0].metadata.name"}},
		},
		"template name repeated in another policy": {
			js: addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{templates: [` + tmpl("data") + `]}, {targetReplicatedJobs: [a], templates: [` + tmpl("data") + `]}]`).
				ReplicatedJobs(addontest.ReplicatedJob("a").Mount("data")).Obj(),
			wantErrs: []fieldErr{{field.ErrorTypeDuplicate, pol + "[1].templates[0].metadata.name"}},
		},
		"template with a namespace": {
			js: addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{templates: [{metadata: {name: data, namespace: other}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}]}]`).
				ReplicatedJobs(addontest.ReplicatedJob("a").Mount("data")).Obj(),
			wantErrs: []fieldErr{{field.ErrorTypeForbidden, pol + "[0].templates[0].metadata.namespace"}},
		},
		"template with a status": {
			js: addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{templates: [{metadata: {name: data}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}, status: {phase: Bound}}]}]`).
				ReplicatedJobs(addontest.ReplicatedJob("a").Mount("data")).Obj(),
			wantErrs: []fieldErr{{field.ErrorTypeForbidden, pol + "[0].templates[0].status"}},
		},
		"template without a storage request": {
			js: addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{templates: [{metadata: {name: data}, spec: {accessModes: [ReadWriteOnce]}}]}]`).
				ReplicatedJobs(addontest.ReplicatedJob("a").Mount("data")).Obj(),
			wantErrs: []fieldErr{{field.ErrorTypeRequired, pol + "[0].templates[0].spec.resources.requests[storage]"}},
		},
		"retention value not supported": {
			js: addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{templates: [` + tmpl("data") + `], retentionPolicy: {whenComplete: Keep}}]`).
				ReplicatedJobs(addontest.ReplicatedJob("a").Mount("data")).Obj(),
			wantErrs: []fieldErr{{field.ErrorTypeNotSupported, pol + "[0].retentionPolicy.whenComplete"}},
		},
		"target repeated": {
			js: addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{targetReplicatedJobs: [a, a], templates: [` + tmpl("data") + `]}]`).
				ReplicatedJobs(addontest.ReplicatedJob("a").Mount("data")).Obj(),
			wantErrs: []fieldErr{{field.ErrorTypeDuplicate, pol + "[0].targetReplicatedJobs[1]"}},
		},

		// Refused against the JobSet.
		"target not found": {
			js: addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{targetReplicatedJobs: [ghost], templates: [` + tmpl("data") + `]}]`).
				ReplicatedJobs(addontest.ReplicatedJob("a").Mount("data")).Obj(),
			wantErrs: []fieldErr{{field.ErrorTypeNotFound, pol + "[0].targetReplicatedJobs[0]"}},
		},
		"second target not found, in the second policy": {
			js: addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{templates: [` + tmpl("shared") + `]}, {targetReplicatedJobs: [a, ghost], templates: [` + tmpl("data") + `]}]`).
				ReplicatedJobs(addontest.ReplicatedJob("a").Mount("data", "shared")).Obj(),
			wantErrs: []fieldErr{{field.ErrorTypeNotFound, pol + "[1].targetReplicatedJobs[1]"}},
		},
		"target NonIndexed": {
			js: addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{targetReplicatedJobs: [a], templates: [` + tmpl("data") + `]}]`).
				ReplicatedJobs(addontest.ReplicatedJob("a").CompletionMode(ptr.To(batchv1.NonIndexedCompletion)).Mount("data")).Obj(),
			wantErrs: []fieldErr{{field.ErrorTypeInvalid, pol + "[0].targetReplicatedJobs[0]"}},
		},
		"target without a completion mode (upstream's defaulting did not run)": {
			js: addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{targetReplicatedJobs: [a], templates: [` + tmpl("data") + `]}]`).
				ReplicatedJobs(addontest.ReplicatedJob("a").CompletionMode(nil).Mount("data")).Obj(),
			wantErrs: []fieldErr{{field.ErrorTypeInvalid, pol + "[0].targetReplicatedJobs[0]"}},
		},
		"per-pod template mounted only by a ReplicatedJob it does not target": {
			js: addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{targetReplicatedJobs: [a], templates: [`+tmpl("data")+`]}]`).
				ReplicatedJobs(addontest.ReplicatedJob("a"), addontest.ReplicatedJob("b").Mount("data")).Obj(),
			wantErrs: []fieldErr{{field.ErrorTypeInvalid, pol + "[0].templates[0].metadata.name"}},
		},
		"shared template mounted by no ReplicatedJob": {
			js: addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{templates: [`+tmpl("data")+`, `+tmpl("logs")+`]}]`).
				ReplicatedJobs(addontest.ReplicatedJob("a").Mount("data"), addontest.ReplicatedJob("b").Mount("data")).Obj(),
			wantErrs: []fieldErr{{field.ErrorTypeInvalid, pol + "[0].templates[1].metadata.name"}},
		},
		"shared template clashes with an emptyDir volume": {
			js: addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{templates: [`+tmpl("data")+`]}]`).
				ReplicatedJobs(addontest.ReplicatedJob("a").Mount("data"), addontest.ReplicatedJob("b").Mount("data").EmptyDir("cache").EmptyDir("data")).Obj(),
			wantErrs: []fieldErr{{field.ErrorTypeDuplicate, pol + "[0].templates[0].metadata.name"}},
		},
		"shared template clashes with a volume of another claim": {
			js: addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{templates: [` + tmpl("data") + `]}]`).
				ReplicatedJobs(addontest.ReplicatedJob("a").Mount("data").ClaimVolume("data", "data-other-jobset")).Obj(),
			wantErrs: []fieldErr{{field.ErrorTypeDuplicate, pol + "[0].templates[0].metadata.name"}},
		},
		"per-pod template clashes with a volume in each of two targets": {
			js: addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{targetReplicatedJobs: [a, b], templates: [`+tmpl("scratch")+`]}]`).
				ReplicatedJobs(addontest.ReplicatedJob("a").Mount("scratch").EmptyDir("scratch"), addontest.ReplicatedJob("b").Mount("scratch").EmptyDir("scratch")).Obj(),
			wantErrs: []fieldErr{
				{field.ErrorTypeDuplicate, pol + "[0].templates[0].metadata.name"},
				{field.ErrorTypeDuplicate, pol + "[0].templates[0].metadata.name"},
			},
		},
		"per-pod template clashes with a claim volume named like a shared one": {
			js: addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{targetReplicatedJobs: [a], templates: [` + tmpl("data") + `]}]`).
				ReplicatedJobs(addontest.ReplicatedJob("a").Mount("data").ClaimVolume("data", "data-train")).Obj(),
			wantErrs: []fieldErr{{field.ErrorTypeDuplicate, pol + "[0].templates[0].metadata.name"}},
		},
		"template also in upstream's spec.volumeClaimPolicies": {
			js: func() *jobsetv1alpha2.JobSet {
				js := addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{targetReplicatedJobs: [a], templates: [` + tmpl("data") + `]}]`).
					ReplicatedJobs(addontest.ReplicatedJob("a").Mount("data", "model")).Obj()
				js.Spec.VolumeClaimPolicies = []jobsetv1alpha2.VolumeClaimPolicy{{Templates: []corev1.PersistentVolumeClaim{
					{ObjectMeta: metav1.ObjectMeta{Name: "model"}}, {ObjectMeta: metav1.ObjectMeta{Name: "data"}},
				}}}
				return js
			}(),
			wantErrs: []fieldErr{{field.ErrorTypeDuplicate, pol + "[0].templates[0].metadata.name"}},
		},
		"shared PVC name longer than 253 characters": {
			js: addontest.JobSet("default", long).VolumeClaimsPolicies(`[{templates: [` + tmpl("twelve-chars") + `]}]`).
				ReplicatedJobs(addontest.ReplicatedJob("a").Mount("twelve-chars")).Obj(),
			wantErrs: []fieldErr{{field.ErrorTypeInvalid, pol + "[0].templates[0].metadata.name"}},
		},
		"per-pod PVC name longer than 253 characters at the highest index only": {
			// data-<js>-w-0-0 has 253 characters, data-<js>-w-10-10 has 255.
			js: addontest.JobSet("default", strings.Repeat("a", 242)).VolumeClaimsPolicies(`[{targetReplicatedJobs: [w], templates: [` + tmpl("data") + `]}]`).
				ReplicatedJobs(addontest.ReplicatedJob("w").Replicas(11).Pods(11).Mount("data")).Obj(),
			wantErrs: []fieldErr{{field.ErrorTypeInvalid, pol + "[0].templates[0].metadata.name"}},
		},
		"generateName: the mutating webhook saw no name": {
			js: addontest.JobSet("default", "").GenerateName("train-").VolumeClaimsPolicies(`[{templates: [` + tmpl("data") + `]}]`).
				ReplicatedJobs(addontest.ReplicatedJob("a").Mount("data")).Obj(),
			generatedName: "train-x7k2p",
			wantErrs:      []fieldErr{{field.ErrorTypeForbidden, "metadata.generateName"}},
		},
		"every problem at once": {
			js: addontest.JobSet("default", "train").
				VolumeClaimsPolicies(`[{templates: [`+tmpl("shared")+`]}, {targetReplicatedJobs: [ghost, batch, w], templates: [`+tmpl("data")+`, `+tmpl("Bad")+`], retentionPolicy: {whenFailed: Never}}]`).
				ReplicatedJobs(
					addontest.ReplicatedJob("batch").CompletionMode(ptr.To(batchv1.NonIndexedCompletion)),
					addontest.ReplicatedJob("w").EmptyDir("shared"),
				).Obj(),
			wantErrs: []fieldErr{
				{field.ErrorTypeInvalid, pol + "[1].templates[1].metadata.name"},
				{field.ErrorTypeNotSupported, pol + "[1].retentionPolicy.whenFailed"},
				{field.ErrorTypeInvalid, pol + "[0].templates[0].metadata.name"},
				{field.ErrorTypeDuplicate, pol + "[0].templates[0].metadata.name"},
				{field.ErrorTypeNotFound, pol + "[1].targetReplicatedJobs[0]"},
				{field.ErrorTypeInvalid, pol + "[1].targetReplicatedJobs[1]"},
				{field.ErrorTypeInvalid, pol + "[1].templates[0].metadata.name"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := admitCreate(t, tc.js, tc.generatedName)
			if diff := cmp.Diff(tc.wantErrs, causes(t, err)); diff != "" {
				t.Errorf("Errors (-want +got):\n%s\nerror: %v", diff, err)
			}
		})
	}
}

// TestValidateCreateWithoutDefault checks that validation alone, without the mutating webhook
// before it, accepts the stories: it does not depend on what was injected.
func TestValidateCreateWithoutDefault(t *testing.T) {
	for name, js := range map[string]*addontest.JobSetWrapper{"1": story1(), "2": story2(), "3": story3(), "4": story4()} {
		t.Run("story "+name, func(t *testing.T) {
			if _, err := (&JobSetWebhook{}).ValidateCreate(context.Background(), js.Obj()); err != nil {
				t.Errorf("ValidateCreate: %v", err)
			}
		})
	}
}

func TestValidateCreateMessages(t *testing.T) {
	js := addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{targetReplicatedJobs: [a, b], templates: [`+tmpl("data")+`]}]`).
		ReplicatedJobs(
			addontest.ReplicatedJob("a").CompletionMode(ptr.To(batchv1.NonIndexedCompletion)).EmptyDir("data"),
			addontest.ReplicatedJob("z"), addontest.ReplicatedJob("b"),
		).Obj()
	_, err := (&JobSetWebhook{}).ValidateCreate(context.Background(), js)
	if err == nil {
		t.Fatal("ValidateCreate accepted the JobSet")
	}
	for _, want := range []string{
		`JobSet.jobset.x-k8s.io "train" is invalid`,
		pol + `[0].targetReplicatedJobs[0]: Invalid value: "a": spec.replicatedJobs[0].template.spec.completionMode must be Indexed`,
		pol + `[0].templates[0].metadata.name: Invalid value: "data": must be the name of a volumeMount of a container or init container in the target ReplicatedJobs (a, b)`,
		pol + `[0].templates[0].metadata.name: Duplicate value: "data": clashes with spec.replicatedJobs[0].template.spec.template.spec.volumes[0]`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Error %q does not contain %q", err, want)
		}
	}
}

func TestValidateUpdate(t *testing.T) {
	base := func() *addontest.JobSetWrapper {
		return addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{templates: [` + tmpl("data") + `]}]`).VolumeClaimsAdmitted().
			ReplicatedJobs(addontest.ReplicatedJob("a").Mount("data").ClaimVolume("data", "data-train"))
	}
	cases := map[string]struct {
		oldJS, newJS *jobsetv1alpha2.JobSet
		wantErrs     []fieldErr
	}{
		"unchanged": {oldJS: base().Obj(), newJS: base().Obj()},
		"other annotations and spec change": {
			oldJS: base().Obj(),
			newJS: base().Annotation("team", "ml").Suspend(true).Obj(),
		},
		"no policies before or after": {
			oldJS: addontest.JobSet("default", "plain").ReplicatedJobs(addontest.ReplicatedJob("a")).Obj(),
			newJS: addontest.JobSet("default", "plain").Annotation("team", "ml").ReplicatedJobs(addontest.ReplicatedJob("a")).Obj(),
		},
		"policies changed": {
			oldJS:    base().Obj(),
			newJS:    base().VolumeClaimsPolicies(`[{templates: [` + tmpl("other") + `]}]`).Obj(),
			wantErrs: []fieldErr{{field.ErrorTypeForbidden, pol}},
		},
		"policies reformatted": {
			oldJS:    base().Obj(),
			newJS:    base().VolumeClaimsPolicies(`[{templates: [` + tmpl("data") + `]}]` + "\n").Obj(),
			wantErrs: []fieldErr{{field.ErrorTypeForbidden, pol}},
		},
		"policies added": {
			oldJS: addontest.JobSet("default", "train").ReplicatedJobs(addontest.ReplicatedJob("a").Mount("data")).Obj(),
			newJS: addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{templates: [` + tmpl("data") + `]}]`).
				ReplicatedJobs(addontest.ReplicatedJob("a").Mount("data")).Obj(),
			wantErrs: []fieldErr{{field.ErrorTypeForbidden, pol}},
		},
		"policies removed": {
			oldJS: base().Obj(),
			newJS: func() *jobsetv1alpha2.JobSet {
				js := base().Obj()
				delete(js.Annotations, contract.PoliciesAnnotationKey)
				return js
			}(),
			wantErrs: []fieldErr{{field.ErrorTypeForbidden, pol}},
		},
		"marker removed": {
			oldJS: base().Obj(),
			newJS: func() *jobsetv1alpha2.JobSet {
				js := base().Obj()
				delete(js.Annotations, contract.VolumeClaimsAdmittedAnnotationKey)
				return js
			}(),
			wantErrs: []fieldErr{{field.ErrorTypeForbidden, marker}},
		},
		"marker added": {
			oldJS: addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{templates: [` + tmpl("data") + `]}]`).
				ReplicatedJobs(addontest.ReplicatedJob("a").Mount("data")).Obj(),
			newJS: addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{templates: [` + tmpl("data") + `]}]`).VolumeClaimsAdmitted().
				ReplicatedJobs(addontest.ReplicatedJob("a").Mount("data")).Obj(),
			wantErrs: []fieldErr{{field.ErrorTypeForbidden, marker}},
		},
		"marker changed": {
			oldJS:    base().Obj(),
			newJS:    base().Annotation(contract.VolumeClaimsAdmittedAnnotationKey, "false").Obj(),
			wantErrs: []fieldErr{{field.ErrorTypeForbidden, marker}},
		},
		"all annotations removed": {
			oldJS: base().Obj(),
			newJS: func() *jobsetv1alpha2.JobSet {
				js := base().Obj()
				js.Annotations = nil
				return js
			}(),
			wantErrs: []fieldErr{{field.ErrorTypeForbidden, pol}, {field.ErrorTypeForbidden, marker}},
		},
		"unchanged but invalid policies are not checked again": {
			oldJS: addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{targetReplicatedJobs: [ghost], templates: [` + tmpl("data") + `]}]`).VolumeClaimsAdmitted().
				ReplicatedJobs(addontest.ReplicatedJob("a")).Obj(),
			newJS: addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{targetReplicatedJobs: [ghost], templates: [` + tmpl("data") + `]}]`).VolumeClaimsAdmitted().
				ReplicatedJobs(addontest.ReplicatedJob("a")).Obj(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := &JobSetWebhook{}
			ctx := ctxFor(admissionv1.Update)
			// The mutating webhook runs on UPDATE only if the configuration asks: it must change nothing.
			before := tc.newJS.DeepCopy()
			if err := w.Default(ctx, tc.newJS); err != nil {
				t.Fatalf("Default: %v", err)
			}
			if diff := cmp.Diff(before, tc.newJS); diff != "" {
				t.Errorf("Default on UPDATE changed the JobSet (-before +after):\n%s", diff)
			}
			warnings, err := w.ValidateUpdate(ctx, tc.oldJS, tc.newJS)
			if len(warnings) != 0 {
				t.Errorf("Warnings: %v", warnings)
			}
			if diff := cmp.Diff(tc.wantErrs, causes(t, err)); diff != "" {
				t.Errorf("Errors (-want +got):\n%s\nerror: %v", diff, err)
			}
		})
	}
}

func TestValidateDelete(t *testing.T) {
	js := addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{targetReplicatedJobs: [ghost], templates: [` + tmpl("data") + `]}]`).Obj()
	warnings, err := (&JobSetWebhook{}).ValidateDelete(ctxFor(admissionv1.Delete), js)
	if err != nil || len(warnings) != 0 {
		t.Errorf("ValidateDelete = %v, %v; want nothing", warnings, err)
	}
}

func TestDefault(t *testing.T) {
	cases := map[string]struct {
		ctx  context.Context
		js   *jobsetv1alpha2.JobSet
		want *jobsetv1alpha2.JobSet
	}{
		"story 1": {
			js: story1().Obj(),
			want: addontest.JobSet("default", "distributed-trainjob").VolumeClaimsPolicies(story1Policies).VolumeClaimsAdmitted().ReplicatedJobs(
				perPod(addontest.ReplicatedJob("node").Replicas(4).Pods(2).Mount("checkpoint-storage"), "checkpoint-storage"),
			).Obj(),
		},
		"story 2": {
			js: story2().Obj(),
			want: addontest.JobSet("default", "trainjob-qwen2.5").VolumeClaimsPolicies(story2Policies).VolumeClaimsAdmitted().ReplicatedJobs(
				shared(addontest.ReplicatedJob("dataset-initializer").Mount("initializer").ClaimVolume("initializer", "initializer-trainjob-qwen2.5"), "initializer"),
				shared(addontest.ReplicatedJob("model-initializer").Mount("initializer").ClaimVolume("initializer", "initializer-trainjob-qwen2.5"), "initializer"),
				shared(addontest.ReplicatedJob("node").DependsOn("dataset-initializer").DependsOn("model-initializer").Mount("initializer").
					ClaimVolume("initializer", "initializer-trainjob-qwen2.5"), "initializer"),
			).Obj(),
		},
		"story 3": {
			js: story3().Obj(),
			want: addontest.JobSet("default", "hybrid-training").VolumeClaimsPolicies(story3Policies).VolumeClaimsAdmitted().ReplicatedJobs(
				perPod(shared(addontest.ReplicatedJob("data-loader").Replicas(4).Mount("worker-scratch", "dataset-cache").
					ClaimVolume("dataset-cache", "dataset-cache-hybrid-training"), "dataset-cache"), "worker-scratch"),
				perPod(shared(addontest.ReplicatedJob("trainer").Replicas(3).Pods(6).Mount("worker-scratch", "dataset-cache", "results-storage").
					ClaimVolume("dataset-cache", "dataset-cache-hybrid-training").
					ClaimVolume("results-storage", "results-storage-hybrid-training"), "dataset-cache,results-storage"), "worker-scratch"),
				shared(addontest.ReplicatedJob("evaluator").Replicas(2).Mount("results-storage").
					ClaimVolume("results-storage", "results-storage-hybrid-training"), "results-storage"),
			).Obj(),
		},
		"story 4": {
			js: story4().Obj(),
			want: addontest.JobSet("hpc", "hpc-simulation").VolumeClaimsPolicies(story4Policies).VolumeClaimsAdmitted().ReplicatedJobs(
				perPod(addontest.ReplicatedJob("compute-node").Replicas(16).Mount("simulation-data"), "simulation-data"),
			).Obj(),
		},
		"per-pod templates of two policies on one target, beside the user's pod-template metadata": {
			js: addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{targetReplicatedJobs: [a], templates: [` + tmpl("zeta") + `]}, {targetReplicatedJobs: [a], templates: [` + tmpl("alpha") + `]}]`).
				ReplicatedJobs(addontest.ReplicatedJob("a").PodLabel("app", "x").PodAnnotation("note", "y").Mount("zeta", "alpha")).Obj(),
			want: addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{targetReplicatedJobs: [a], templates: [` + tmpl("zeta") + `]}, {targetReplicatedJobs: [a], templates: [` + tmpl("alpha") + `]}]`).VolumeClaimsAdmitted().
				ReplicatedJobs(perPod(addontest.ReplicatedJob("a").PodLabel("app", "x").PodAnnotation("note", "y").Mount("zeta", "alpha").
					// Placeholders in the order of the policies.
					ClaimVolume("zeta", contract.VolumeClaimsPlaceholderClaimName).ClaimVolume("alpha", contract.VolumeClaimsPlaceholderClaimName), "alpha,zeta")).Obj(),
		},
		"shared volume already in the template is left as it is": {
			js: addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{templates: [`+tmpl("data")+`]}]`).
				ReplicatedJobs(addontest.ReplicatedJob("a").Mount("data").EmptyDir("data"), addontest.ReplicatedJob("b").Mount("data")).Obj(),
			want: addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{templates: [`+tmpl("data")+`]}]`).VolumeClaimsAdmitted().
				ReplicatedJobs(addontest.ReplicatedJob("a").Mount("data").EmptyDir("data"), shared(addontest.ReplicatedJob("b").Mount("data").ClaimVolume("data", "data-train"), "data")).Obj(),
		},
		"no policies annotation": {
			js:   addontest.JobSet("default", "plain").ReplicatedJobs(addontest.ReplicatedJob("a").Mount("data")).Obj(),
			want: addontest.JobSet("default", "plain").ReplicatedJobs(addontest.ReplicatedJob("a").Mount("data")).Obj(),
		},
		"policies that do not parse": {
			js: addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{templates: [` + tmpl("data") + `], retentionPolicy: {whenDeleted: Never}}]`).
				ReplicatedJobs(addontest.ReplicatedJob("a").Mount("data")).Obj(),
			want: addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{templates: [` + tmpl("data") + `], retentionPolicy: {whenDeleted: Never}}]`).
				ReplicatedJobs(addontest.ReplicatedJob("a").Mount("data")).Obj(),
		},
		"generateName: no name yet": {
			js: addontest.JobSet("default", "").GenerateName("train-").VolumeClaimsPolicies(`[{templates: [` + tmpl("data") + `]}]`).
				ReplicatedJobs(addontest.ReplicatedJob("a").Mount("data")).Obj(),
			want: addontest.JobSet("default", "").GenerateName("train-").VolumeClaimsPolicies(`[{templates: [` + tmpl("data") + `]}]`).
				ReplicatedJobs(addontest.ReplicatedJob("a").Mount("data")).Obj(),
		},
		"UPDATE": {
			ctx:  ctxFor(admissionv1.Update),
			js:   story3().Obj(),
			want: story3().Obj(),
		},
		"no admission request in the context: CREATE": {
			ctx: context.Background(),
			js:  story4().Obj(),
			want: addontest.JobSet("hpc", "hpc-simulation").VolumeClaimsPolicies(story4Policies).VolumeClaimsAdmitted().ReplicatedJobs(
				perPod(addontest.ReplicatedJob("compute-node").Replicas(16).Mount("simulation-data"), "simulation-data"),
			).Obj(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := tc.ctx
			if ctx == nil {
				ctx = ctxFor(admissionv1.Create)
			}
			w := &JobSetWebhook{}
			if err := w.Default(ctx, tc.js); err != nil {
				t.Fatalf("Default: %v", err)
			}
			if diff := cmp.Diff(tc.want, tc.js); diff != "" {
				t.Errorf("JobSet (-want +got):\n%s", diff)
			}
			once := tc.js.DeepCopy()
			if err := w.Default(ctx, tc.js); err != nil {
				t.Fatalf("Default again: %v", err)
			}
			if diff := cmp.Diff(once, tc.js); diff != "" {
				t.Errorf("Default twice differs from once (-once +twice):\n%s", diff)
			}
		})
	}
}
