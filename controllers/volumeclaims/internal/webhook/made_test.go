package webhook

import (
	"context"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// A pod that comes before its PVC makes it, for its own JobSet, so that no other JobSet of a
// colliding name can make it first and have the pod mount its data: the create is what
// decides whose the name is.
func TestPodWebhookMakesItsPVC(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = jobsetv1alpha2.AddToScheme(scheme)
	const uid = "uid-gpt-eval"
	js := addontest.JobSet("default", "gpt-eval").UID(uid).
		VolumeClaimsPolicies(`[{targetReplicatedJobs: [worker], templates: [{metadata: {name: ckpt, labels: {team: a}}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 2Gi}}}}], retentionPolicy: {whenDeleted: Delete}},
{templates: [{metadata: {name: data}, spec: {accessModes: [ReadWriteMany], resources: {requests: {storage: 1Gi}}}}]}]`).
		ReplicatedJobs(addontest.ReplicatedJob("worker").Mount("ckpt", "data")).Obj()
	perPod := func() *corev1.Pod {
		return pod("gpt-eval", "worker", 0, 0, "ckpt").Label(contract.JobSetUIDLabelKey, uid).Obj()
	}
	shared := func() *corev1.Pod {
		return sharedPod("gpt-eval", "data").Label(contract.JobSetUIDLabelKey, uid).Volume(addontest.ClaimVolume("data", "data-gpt-eval")).Obj()
	}
	gpts := func(name string) *corev1.PersistentVolumeClaim {
		p := madePVC(name, "gpt", map[string]string{contract.VolumeClaimTemplateLabelKey: "ckpt",
			contract.VolumeClaimReplicatedJobLabelKey: "eval-worker", contract.VolumeClaimJobIndexLabelKey: "0", contract.VolumeClaimPodIndexLabelKey: "0"})
		p.Annotations = map[string]string{contract.VolumeClaimJobSetUIDAnnotationKey: "uid-gpt"}
		return p
	}
	quota := apierrors.NewForbidden(schema.GroupResource{Resource: "persistentvolumeclaims"}, "ckpt-gpt-eval-worker-0-0", errString("exceeded quota: q"))
	cases := map[string]struct {
		pod      *corev1.Pod
		dryRun   bool
		jobSet   *jobsetv1alpha2.JobSet
		existing []client.Object // in the API server, not in the cache
		create   error           // the create's answer
		wantCode int32
		wantMsg  string
		wantMade string // the PVC made for JobSet gpt-eval, "" for none
	}{
		"per-pod, not made yet: made for the pod's JobSet": {
			pod: perPod(), jobSet: js, wantCode: http.StatusOK, wantMade: "ckpt-gpt-eval-worker-0-0",
		},
		"shared, not made yet: made for the pod's JobSet": {
			pod: shared(), jobSet: js, wantCode: http.StatusOK, wantMade: "data-gpt-eval",
		},
		"a dry run makes nothing": {
			pod: perPod(), dryRun: true, jobSet: js, wantCode: http.StatusOK,
		},
		"made meanwhile by another JobSet (the cache is behind): denied, naming it": {
			pod: perPod(), jobSet: js, existing: []client.Object{gpts("ckpt-gpt-eval-worker-0-0")},
			wantCode: http.StatusForbidden, wantMsg: "ckpt-gpt-eval-worker-0-0 (volume ckpt) exists and was made for JobSet gpt (uid uid-gpt)",
		},
		"a user's PVC of that name: mounted as it is": {
			pod: perPod(), jobSet: js,
			existing: []client.Object{&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "ckpt-gpt-eval-worker-0-0"}}},
			wantCode: http.StatusOK,
		},
		"cannot be made (a quota): denied, naming the PVC, until it can": {
			pod: perPod(), jobSet: js, create: quota, wantCode: http.StatusForbidden,
			wantMsg: "ckpt-gpt-eval-worker-0-0 (volume ckpt) does not exist yet and cannot be made for JobSet gpt-eval",
		},
		"the pod's JobSet is another of that name (a new UID): nothing made": {
			pod: perPod(), jobSet: addontest.JobSet("default", "gpt-eval").UID("uid-new").VolumeClaimsPolicies(js.Annotations[contract.PoliciesAnnotationKey]).
				ReplicatedJobs(addontest.ReplicatedJob("worker").Mount("ckpt", "data")).Obj(),
			wantCode: http.StatusOK,
		},
		"a pod of an index the JobSet does not have (its labels are not the JobSet's word): nothing made": {
			pod: pod("gpt-eval", "worker", 7, 0, "ckpt").Label(contract.JobSetUIDLabelKey, uid).Obj(), jobSet: js, wantCode: http.StatusOK,
		},
		"the pod's JobSet is gone: nothing made": {
			pod: perPod(), wantCode: http.StatusOK,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs := tc.existing
			if tc.jobSet != nil {
				objs = append(objs, tc.jobSet)
			}
			api := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
				Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					if tc.create != nil {
						return tc.create
					}
					return c.Create(ctx, obj, opts...)
				},
			}).Build()
			cache := fake.NewClientBuilder().WithScheme(scheme).Build() // the add-on's PVCs: none yet
			req := podRequest(t, "CREATE", tc.pod)
			req.DryRun = ptr.To(tc.dryRun)
			resp := (&PodWebhook{Claims: cache, JobSets: cache, Client: api}).Handle(context.Background(), req)
			if resp.Result == nil || resp.Result.Code != tc.wantCode || !strings.Contains(resp.Result.Message, tc.wantMsg) {
				t.Fatalf("Response allowed=%t result=%+v, want code %d and %q", resp.Allowed, resp.Result, tc.wantCode, tc.wantMsg)
			}
			var list corev1.PersistentVolumeClaimList
			if err := api.List(context.Background(), &list); err != nil {
				t.Fatal(err)
			}
			var made []corev1.PersistentVolumeClaim
			for _, p := range list.Items {
				if p.Labels[contract.JobSetNameLabelKey] == "gpt-eval" {
					made = append(made, p)
				}
			}
			if tc.wantMade == "" {
				if len(made) > 0 {
					t.Fatalf("made %s, want nothing made", made[0].Name)
				}
				return
			}
			if len(made) != 1 || made[0].Name != tc.wantMade {
				t.Fatalf("made %v, want %s", made, tc.wantMade)
			}
			p := made[0]
			if p.Annotations[contract.VolumeClaimJobSetUIDAnnotationKey] != uid || p.Labels[contract.ManagedByLabelKey] != contract.VolumeClaimsManagedByValue {
				t.Errorf("PVC %s is not the JobSet's: labels %v, annotations %v", p.Name, p.Labels, p.Annotations)
			}
			if tc.wantMade == "ckpt-gpt-eval-worker-0-0" {
				if p.Labels["team"] != "a" || !p.Spec.Resources.Requests.Storage().Equal(resource.MustParse("2Gi")) || len(p.OwnerReferences) != 1 ||
					p.Labels[contract.VolumeClaimPodIndexLabelKey] != "0" || p.Labels[contract.VolumeClaimReplicatedJobLabelKey] != "worker" {
					t.Errorf("PVC %s is not the template's: labels %v, requests %v, owners %v", p.Name, p.Labels, p.Spec.Resources.Requests, p.OwnerReferences)
				}
			}
		})
	}
}

type errString string

func (e errString) Error() string { return string(e) }
