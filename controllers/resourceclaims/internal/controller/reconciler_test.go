package controller

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/controllers/resourceclaims/internal/claims"
	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, jobsetv1alpha2.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// cacheBuilder is a fake client of scheme that holds the reconciler's field indexes
// (IndexFields), as the manager's cache does.
func cacheBuilder(scheme *runtime.Scheme) *fake.ClientBuilder {
	return fake.NewClientBuilder().WithScheme(scheme).
		WithIndex(&batchv1.Job{}, JobSetNameIndex, jobsets.IndexByName).
		WithIndex(&resourcev1.ResourceClaim{}, JobSetNameIndex, jobsets.IndexByName)
}

// devJobSet is JobSet ns/js (UID js-uid) of ReplicatedJob w, replicas Jobs each with the
// per-Job claim of template dev.
func devJobSet(replicas int32) *addontest.JobSetWrapper {
	return addontest.JobSet("ns", "js").UID("js-uid").ReplicatedJobs(addontest.ReplicatedJob("w").Replicas(replicas).
		JobAnnotation(contract.TemplatesAnnotationKey, `[{metadata: {name: dev}, spec: {devices: {requests: [{name: d, exactly: {deviceClassName: c}}]}}}]`))
}

// staleCache reads from a snapshot of the server (the cache, behind) and writes to the server,
// counting the writes by verb.
type staleCache struct {
	client.Client // the snapshot: Get and List
	server        client.Client
	mu            sync.Mutex
	writes        map[string]int
}

func (s *staleCache) count(verb string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes[verb]++
}

func (s *staleCache) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	s.count("create")
	obj.SetUID(types.UID(obj.GetName() + "-uid")) // as the apiserver gives one; the fake client does not
	return s.server.Create(ctx, obj, opts...)
}

func (s *staleCache) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	s.count("delete")
	return s.server.Delete(ctx, obj, opts...)
}

// Patch applies the adoption's JSON patch (a test of the owners, which the fake client's
// JSON patch does not pass, then their replacement) to the server's claim.
func (s *staleCache) Patch(ctx context.Context, obj client.Object, patch client.Patch, _ ...client.PatchOption) error {
	s.count("patch")
	data, err := patch.Data(obj)
	if err != nil {
		return err
	}
	var ops []struct {
		Op    string                  `json:"op"`
		Value []metav1.OwnerReference `json:"value"`
	}
	if err := json.Unmarshal(data, &ops); err != nil {
		return err
	}
	claim := &resourcev1.ResourceClaim{}
	if err := s.server.Get(ctx, client.ObjectKeyFromObject(obj), claim); err != nil {
		return err
	}
	if !equality.Semantic.DeepEqual(claim.OwnerReferences, ops[0].Value) {
		return apierrors.NewInvalid(schema.GroupKind{Group: "resource.k8s.io", Kind: "ResourceClaim"}, obj.GetName(), nil)
	}
	claim.OwnerReferences = ops[1].Value
	return s.server.Update(ctx, claim)
}

// snapshot is a client holding a copy of every object the server has of js's namespace now.
func snapshot(t *testing.T, scheme *runtime.Scheme, server client.Client, ns string) client.Client {
	t.Helper()
	ctx := context.Background()
	var objs []client.Object
	var jobSets jobsetv1alpha2.JobSetList
	var jobs batchv1.JobList
	var claimList resourcev1.ResourceClaimList
	for _, l := range []client.ObjectList{&jobSets, &jobs, &claimList} {
		if err := server.List(ctx, l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range jobSets.Items {
		objs = append(objs, &jobSets.Items[i])
	}
	for i := range jobs.Items {
		objs = append(objs, &jobs.Items[i])
	}
	for i := range claimList.Items {
		objs = append(objs, &claimList.Items[i])
	}
	return cacheBuilder(scheme).WithObjects(objs...).Build()
}

// TestStaleCacheWritesOnce: reconciles that run before the cache shows the claim adopted, then
// deleted, adopt it once and delete it once (make bench ADDON=scale measured, per JobSet of 4
// claims, a second adopt refused by its test, a read, and a second delete answered 404 with a
// second ResourceClaimsDeleted Event).
func TestStaleCacheWritesOnce(t *testing.T) {
	ctx := context.Background()
	scheme := testScheme(t)
	const ns = "ns"
	js := devJobSet(1).Obj()
	server := cacheBuilder(scheme).WithObjects(js).Build()
	gates := featuregate.NewFeatureGate()
	if err := gates.Add(claims.Gates); err != nil {
		t.Fatal(err)
	}
	rec := events.NewFakeRecorder(100)
	reconcile := func(c *staleCache) {
		t.Helper()
		r := &Reconciler{Client: c, APIReader: c.server, Adopter: c, Recorder: rec, Gates: gates, Workers: 1, changed: changedTracker}
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "js"}}); err != nil {
			t.Fatal(err)
		}
	}
	// The claim is made ahead of its Job.
	fresh := &staleCache{Client: server, server: server, writes: map[string]int{}}
	changedTracker = addon.NewChanged()
	reconcile(fresh)
	if fresh.writes["create"] != 1 {
		t.Fatalf("writes %v, want one create", fresh.writes)
	}

	// The Job appears, as the JobSet controller makes it.
	job := addontest.Job(js, "w", 0).UID("job-uid").ControlledBy(js).Obj()
	if err := server.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	// Two reconciles on a cache that shows the Job and the claim still the JobSet's.
	stale := &staleCache{Client: snapshot(t, scheme, server, ns), server: server, writes: map[string]int{}}
	reconcile(stale)
	reconcile(stale)
	if stale.writes["patch"] != 1 || len(stale.writes) != 1 {
		t.Fatalf("writes %v, want one patch (the adoption)", stale.writes)
	}

	// The Job finishes; two reconciles on a cache that shows the claim after that.
	job.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
	job.Status.CompletionTime = ptr.To(metav1.Now())
	if err := server.Status().Update(ctx, job); err != nil {
		t.Fatal(err)
	}
	stale = &staleCache{Client: snapshot(t, scheme, server, ns), server: server, writes: map[string]int{}}
	reconcile(stale)
	reconcile(stale)
	if stale.writes["delete"] != 1 || len(stale.writes) != 1 {
		t.Fatalf("writes %v, want one delete", stale.writes)
	}
	deleted := 0
	for len(rec.Events) > 0 {
		if e := <-rec.Events; strings.Contains(e, ReasonDeleted) {
			deleted++
		}
	}
	if deleted != 1 {
		t.Fatalf("%d %s Events, want 1", deleted, ReasonDeleted)
	}
}

// changedTracker is the test's Changed, kept across the reconcilers of one process.
var changedTracker *addon.Changed

// TestClaimOfAnotherJobLeftAlone: a claim of the add-on's at the name a Job's claim needs, made
// for another Job (names are joined with "-": Job a-w-0's template 1-gpu and Job a-w-0-1's gpu
// give one name), is neither deleted nor changed, and is told; one left by an earlier Job of
// the same JobSet, ReplicatedJob, index and template is deleted, to be made again.
func TestClaimOfAnotherJobLeftAlone(t *testing.T) {
	ctx := context.Background()
	scheme := testScheme(t)
	js := devJobSet(1).Obj()
	controller := true
	claimOf := func(jobSet, rj, index, template, owner string) *resourcev1.ResourceClaim {
		return &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: "js-w-0-dev", UID: "claim-uid",
			Labels: map[string]string{
				contract.ManagedByLabelKey: contract.ResourceClaimsManagedByValue, contract.JobSetNameLabelKey: jobSet,
				contract.ReplicatedJobNameLabelKey: rj, contract.JobIndexLabelKey: index, contract.ResourceClaimTemplateLabelKey: template,
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "x", UID: types.UID(owner), Controller: &controller}},
		}}
	}
	gates := featuregate.NewFeatureGate()
	if err := gates.Add(claims.Gates); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		existing    *resourcev1.ResourceClaim
		wantDeleted bool
		wantEvent   string
	}{
		"another JobSet's": {
			existing:  claimOf("js-w", "0", "0", "dev", "other-job-uid"),
			wantEvent: "Warning ResourceClaimNameTaken ResourceClaims js-w-0-dev (made for JobSet js-w (uid other-job-uid) for job-index=0, replicatedjob-name=0, template=dev) exist and were made for another Job",
		},
		"this JobSet's, another template": {
			existing:  claimOf("js", "w", "0", "1-dev", "other-job-uid"),
			wantEvent: "Warning ResourceClaimNameTaken ResourceClaims js-w-0-dev (made for JobSet js (uid other-job-uid) for job-index=0, replicatedjob-name=w, template=1-dev) exist and were made for another Job",
		},
		"an earlier Job's of the same part": {
			existing:    claimOf("js", "w", "0", "dev", "earlier-job-uid"),
			wantDeleted: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			server := cacheBuilder(scheme).WithObjects(js, tc.existing).Build()
			// The cache does not show the claim: the create collides.
			c := &staleCache{Client: cacheBuilder(scheme).WithObjects(js).Build(), server: server, writes: map[string]int{}}
			rec := events.NewFakeRecorder(100)
			r := &Reconciler{Client: c, APIReader: server, Adopter: c, Recorder: rec, Gates: gates, Workers: 1, changed: addon.NewChanged()}
			_, _ = r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "js"}})
			if got := c.writes["delete"] == 1; got != tc.wantDeleted {
				t.Errorf("writes %v, want deleted %v", c.writes, tc.wantDeleted)
			}
			var got []string
			for len(rec.Events) > 0 {
				if e := <-rec.Events; strings.Contains(e, ReasonNameTaken) {
					got = append(got, e)
				}
			}
			if tc.wantEvent == "" && len(got) > 0 || tc.wantEvent != "" && (len(got) != 1 || !strings.HasPrefix(got[0], tc.wantEvent)) {
				t.Errorf("Events %q, want one starting %q", got, tc.wantEvent)
			}
		})
	}
}
