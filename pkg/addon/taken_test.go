package addon

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestForeignHolder: of the objects of a name, only one made for another JobSet (or another
// part) is named, with what controls it; one of the JobSet's own, one an earlier JobSet of its
// name left, a user's and none at all pass.
func TestForeignHolder(t *testing.T) {
	cm := func(name, jobSet, stage string, owner holder) *corev1.ConfigMap {
		o := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			Labels: map[string]string{contract.ManagedByLabelKey: contract.PodGroupsManagedByValue, contract.JobSetNameLabelKey: jobSet}}}
		if stage != "" {
			o.Labels[contract.PodGroupStageLabelKey] = stage
		}
		if owner.uid != "" {
			o.OwnerReferences = []metav1.OwnerReference{{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: owner.name, UID: ktypes.UID(owner.uid), Controller: ptr.To(true)}}
		}
		return o
	}
	user := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "user"}}
	c := fake.NewClientBuilder().WithObjects(
		cm("train-stage-0", "train", "0", holder{"train", "uid-train"}),
		cm("mine", "train-stage-0", "", holder{"train-stage-0", "uid-mine"}),
		cm("earlier", "train-stage-0", "", holder{"train-stage-0", "uid-earlier"}),
		user,
	).Build()
	id := contract.Identity{ManagedBy: contract.PodGroupsManagedByValue, JobSet: "train-stage-0", UID: "uid-mine", Labels: map[string]string{}, Parts: []string{contract.PodGroupStageLabelKey}}
	for name, want := range map[string]string{
		"train-stage-0": "JobSet train (uid uid-train) for stage=0, held by JobSet train",
		"mine":          "",
		"earlier":       "",
		"user":          "",
		"none":          "",
	} {
		if got := ForeignHolder(context.Background(), c, client.ObjectKey{Namespace: "ns", Name: name}, &corev1.ConfigMap{}, id); got != want {
			t.Errorf("ForeignHolder(%s) = %q, want %q", name, got, want)
		}
	}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "train-stage-0-w-0"}}
	resp := DenyTakenJob("podgroups", job, "its gang", field.ErrorList{field.Forbidden(field.NewPath("x"), Taken("the PodGroup train-stage-0", "JobSet train"))})
	if resp.Allowed || !strings.Contains(resp.Result.Message, "podgroups: Job train-stage-0-w-0 is not created or resumed") ||
		!strings.Contains(resp.Result.Message, "the PodGroup train-stage-0 exists and was made for JobSet train") {
		t.Errorf("DenyTakenJob = %+v, want a denial naming the Job, the object and its JobSet", resp.Result)
	}
}

// TestMakeFirst: the object is made when no object of its name exists; when one does, it is
// named only when it is another JobSet's, and a create refused otherwise is the error.
func TestMakeFirst(t *testing.T) {
	id := contract.Identity{ManagedBy: contract.PodGroupsManagedByValue, JobSet: "train-stage-0", UID: "uid-mine", Labels: map[string]string{}, Parts: []string{contract.PodGroupStageLabelKey}}
	want := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			Labels: map[string]string{contract.ManagedByLabelKey: contract.PodGroupsManagedByValue, contract.JobSetNameLabelKey: "train-stage-0"}}}
	}
	theirs := want("taken")
	theirs.Labels[contract.JobSetNameLabelKey], theirs.Labels[contract.PodGroupStageLabelKey] = "train", "0"
	users := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "users"}}
	c := fake.NewClientBuilder().WithObjects(theirs, users).Build()
	for name, tc := range map[string]struct {
		holder string
		made   bool
	}{
		"new":   {made: true},
		"taken": {holder: "JobSet train for stage=0"},
		"users": {},
	} {
		holder, made, err := MakeFirst(context.Background(), c, want(name), id)
		if err != nil || holder != tc.holder || made != tc.made {
			t.Errorf("MakeFirst(%s) = %q, %t, %v; want %q, %t", name, holder, made, err, tc.holder, tc.made)
		}
	}
	// An unstructured object (a kind of no Go type here) is read back at its kind.
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	u.SetNamespace("ns")
	u.SetName("taken")
	u.SetLabels(want("taken").Labels)
	if holder, made, err := MakeFirst(context.Background(), c, u, id); err != nil || made || holder != "JobSet train for stage=0" {
		t.Errorf("MakeFirst(unstructured taken) = %q, %t, %v; want JobSet train", holder, made, err)
	}
	var got corev1.ConfigMap
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "users"}, &got); err != nil || len(got.Labels) > 0 {
		t.Errorf("the user's object was changed: %v, labels %v", err, got.Labels)
	}
	refused := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
		return apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "new", errors.New("exceeded quota"))
	}}).Build()
	if _, made, err := MakeFirst(context.Background(), refused, want("new"), id); made || !apierrors.IsForbidden(err) {
		t.Errorf("MakeFirst refused = %t, %v; want the refusal", made, err)
	}
}

type holder struct {
	name string
	uid  string
}

// TestDecodeCreateOrResume: a CREATE and the UPDATE that resumes a Job are decoded; any other
// update, a DELETE, is allowed untouched.
func TestDecodeCreateOrResume(t *testing.T) {
	raw := func(suspend *bool) runtime.RawExtension {
		b, err := json.Marshal(&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j"}, Spec: batchv1.JobSpec{Suspend: suspend}})
		if err != nil {
			t.Fatal(err)
		}
		return runtime.RawExtension{Raw: b}
	}
	for _, tc := range []struct {
		name                  string
		op                    admissionv1.Operation
		old, new              *bool
		wantResumed, wantDone bool
	}{
		{name: "create", op: admissionv1.Create, new: ptr.To(true)},
		{name: "resume", op: admissionv1.Update, old: ptr.To(true), new: ptr.To(false), wantResumed: true},
		{name: "resume, suspend dropped", op: admissionv1.Update, old: ptr.To(true), wantResumed: true},
		{name: "suspend", op: admissionv1.Update, old: ptr.To(false), new: ptr.To(true), wantDone: true},
		{name: "other update", op: admissionv1.Update, old: ptr.To(false), new: ptr.To(false), wantDone: true},
		{name: "still suspended", op: admissionv1.Update, old: ptr.To(true), new: ptr.To(true), wantDone: true},
		{name: "delete", op: admissionv1.Delete, wantDone: true},
	} {
		req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: tc.op, Namespace: "ns", Object: raw(tc.new), OldObject: raw(tc.old)}}
		job := &batchv1.Job{}
		resp, resumed, done := DecodeCreateOrResume(req, job)
		if resumed != tc.wantResumed || done != tc.wantDone {
			t.Errorf("%s: resumed %v, done %v; want %v, %v", tc.name, resumed, done, tc.wantResumed, tc.wantDone)
		}
		if done && !resp.Allowed {
			t.Errorf("%s: %+v, want allowed", tc.name, resp.Result)
		}
		if !done && (job.Name != "j" || job.Namespace != "ns") {
			t.Errorf("%s: decoded %s/%s, want ns/j", tc.name, job.Namespace, job.Name)
		}
	}
}

// TestMadeFirstTold: an object of the JobSet made since the process began, not by its
// reconciler (the webhook made it for a pod or Job that came first), is told as created once;
// one made before it began (told by the process before) and one the reconciler made (told as
// it made it) are not.
func TestMadeFirstTold(t *testing.T) {
	started := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	m := MadeFirst{Started: started, Told: &Told{}}
	const uid = ktypes.UID("uid-js")
	at := func(name string, when time.Time) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(when)}}
	}
	if m.Tell(uid, at("before", started.Add(-time.Second))) {
		t.Error("an object made before the process began is told as made")
	}
	byWebhook := at("by-webhook", started)
	if !m.Tell(uid, byWebhook) {
		t.Error("an object the webhook made is not told as made")
	}
	if m.Tell(uid, byWebhook) {
		t.Error("an object the webhook made is told twice")
	}
	m.Made(uid, "by-reconciler")
	if m.Tell(uid, at("by-reconciler", started.Add(time.Minute))) {
		t.Error("an object the reconciler made (and told) is told again")
	}
	var unset MadeFirst
	unset.Made(uid, "x")
	if unset.Tell(uid, byWebhook) {
		t.Error("a MadeFirst without a start (a reconciler not set up) tells an object as made")
	}
}
