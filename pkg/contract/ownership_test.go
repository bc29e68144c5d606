package contract

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// made is an object an add-on made for the JobSet jobSet (uid): its name, and its labels and
// annotations as the add-on writes them.
type made struct {
	name   string
	jobSet string
	uid    types.UID
	parts  map[string]string
}

func (m made) object(managedBy, uidKey string) *metav1.ObjectMeta {
	labels := map[string]string{ManagedByLabelKey: managedBy, JobSetNameLabelKey: m.jobSet}
	for k, v := range m.parts {
		labels[k] = v
	}
	o := &metav1.ObjectMeta{Name: m.name, Labels: labels}
	if uidKey == "" {
		controller := true
		o.OwnerReferences = []metav1.OwnerReference{{Name: m.jobSet, UID: m.uid, Controller: &controller}}
	} else {
		o.Annotations = map[string]string{uidKey: string(m.uid)}
	}
	return o
}

func (m made) identity(managedBy, uidKey string, parts []string) Identity {
	return Identity{ManagedBy: managedBy, JobSet: m.jobSet, UID: m.uid, UIDKey: uidKey, Labels: m.parts, Parts: parts}
}

func must(t *testing.T) func(string, error) string {
	return func(name string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return name
	}
}

func perPod(template, replicatedJob, job, pod string) map[string]string {
	return map[string]string{
		VolumeClaimTemplateLabelKey: template, VolumeClaimReplicatedJobLabelKey: replicatedJob,
		VolumeClaimJobIndexLabelKey: job, VolumeClaimPodIndexLabelKey: pod,
	}
}

// TestNameCollisions lists pairs of JobSets of one namespace whose add-ons' objects get the same
// name, and what the add-on of the first decides when it finds the second's object there.
func TestNameCollisions(t *testing.T) {
	name := must(t)
	stage := func(i string) map[string]string { return map[string]string{PodGroupStageLabelKey: i} }
	rc := func(template, replicatedJob, job string) map[string]string {
		return map[string]string{ResourceClaimTemplateLabelKey: template, ReplicatedJobNameLabelKey: replicatedJob, JobIndexLabelKey: job}
	}
	rcParts := []string{ResourceClaimTemplateLabelKey, ReplicatedJobNameLabelKey, JobIndexLabelKey}
	const byOwner = "" // podgroups and resourceclaims: the UID of the controller reference
	cases := map[string]struct {
		managedBy, uidKey string
		parts             []string
		mine, theirs      made
		want              Ownership
	}{
		"per-pod PVC: gpt's eval-worker and gpt-eval's worker": {
			managedBy: VolumeClaimsManagedByValue, uidKey: VolumeClaimJobSetUIDAnnotationKey, parts: VolumeClaimPartLabelKeys,
			mine:   made{name(PerPodVolumeClaimName("ckpt", "gpt-eval", "worker", 0, 0)), "gpt-eval", "u2", perPod("ckpt", "worker", "0", "0")},
			theirs: made{name(PerPodVolumeClaimName("ckpt", "gpt", "eval-worker", 0, 0)), "gpt", "u1", perPod("ckpt", "eval-worker", "0", "0")},
			want:   Foreign,
		},
		"shared PVC: base-bert's ckpt and bert's ckpt-base": {
			managedBy: VolumeClaimsManagedByValue, uidKey: VolumeClaimJobSetUIDAnnotationKey, parts: VolumeClaimPartLabelKeys,
			mine:   made{name(SharedVolumeClaimName("ckpt-base", "bert")), "bert", "u2", map[string]string{VolumeClaimTemplateLabelKey: "ckpt-base"}},
			theirs: made{name(SharedVolumeClaimName("ckpt", "base-bert")), "base-bert", "u1", map[string]string{VolumeClaimTemplateLabelKey: "ckpt"}},
			want:   Foreign,
		},
		"shared PVC of JobSet gpt-w-0-0 and per-pod PVC of JobSet gpt": {
			managedBy: VolumeClaimsManagedByValue, uidKey: VolumeClaimJobSetUIDAnnotationKey, parts: VolumeClaimPartLabelKeys,
			mine:   made{name(SharedVolumeClaimName("ckpt", "gpt-w-0-0")), "gpt-w-0-0", "u2", map[string]string{VolumeClaimTemplateLabelKey: "ckpt"}},
			theirs: made{name(PerPodVolumeClaimName("ckpt", "gpt", "w", 0, 0)), "gpt", "u1", perPod("ckpt", "w", "0", "0")},
			want:   Foreign,
		},
		"per-pod PVC: Job names a-b + c and a + b-c": {
			managedBy: VolumeClaimsManagedByValue, uidKey: VolumeClaimJobSetUIDAnnotationKey, parts: VolumeClaimPartLabelKeys,
			mine:   made{name(PerPodVolumeClaimName("t", "a", "b-c", 0, 0)), "a", "u2", perPod("t", "b-c", "0", "0")},
			theirs: made{name(PerPodVolumeClaimName("t-a", "b", "c", 0, 0)), "b", "u1", perPod("t-a", "c", "0", "0")},
			want:   Foreign,
		},
		"per-pod PVC retained by an earlier JobSet of the same name, same part": {
			managedBy: VolumeClaimsManagedByValue, uidKey: VolumeClaimJobSetUIDAnnotationKey, parts: VolumeClaimPartLabelKeys,
			mine:   made{name(PerPodVolumeClaimName("ckpt", "pretrain", "w", 1, 0)), "pretrain", "u2", perPod("ckpt", "w", "1", "0")},
			theirs: made{name(PerPodVolumeClaimName("ckpt", "pretrain", "w", 1, 0)), "pretrain", "u1", perPod("ckpt", "w", "1", "0")},
			want:   Retained,
		},
		"ResourceClaim: Job a-w-0's template 1-gpu and Job a-w-0-1's (JobSet a-w, ReplicatedJob 0) gpu": {
			managedBy: ResourceClaimsManagedByValue, uidKey: byOwner, parts: rcParts,
			mine:   made{name(ResourceClaimName("a-w-0", "1-gpu", 0)), "a", "u2", rc("1-gpu", "w", "0")},
			theirs: made{name(ResourceClaimName("a-w-0-1", "gpu", 0)), "a-w", "u1", rc("gpu", "0", "1")},
			want:   Foreign,
		},
		"ResourceClaim: template r1-gpu of attempt 0 and template gpu of attempt 1, one Job": {
			managedBy: ResourceClaimsManagedByValue, uidKey: byOwner, parts: rcParts,
			mine:   made{name(ResourceClaimName("a-w-0", "r1-gpu", 0)), "a", "u1", rc("r1-gpu", "w", "0")},
			theirs: made{name(ResourceClaimName("a-w-0", "gpu", 1)), "a", "u1", rc("gpu", "w", "0")},
			want:   Foreign,
		},
		"PodGroup: JobSet a-stage-1 unsequenced and JobSet a's stage 1": {
			managedBy: PodGroupsManagedByValue, uidKey: byOwner, parts: []string{PodGroupStageLabelKey},
			mine:   made{name(PodGroupName("a-stage-1")), "a-stage-1", "u2", nil},
			theirs: made{name(StagePodGroupName("a", 1)), "a", "u1", stage("1")},
			want:   Foreign,
		},
		"Workload: JobSet a-stage-1 and JobSet a's stage PodGroup": {
			managedBy: PodGroupsManagedByValue, uidKey: byOwner, parts: []string{PodGroupStageLabelKey},
			mine:   made{name(WorkloadName("a-stage-1")), "a-stage-1", "u2", nil},
			theirs: made{name(StagePodGroupName("a", 1)), "a", "u1", stage("1")},
			want:   Foreign,
		},
		"Job PodGroup: Job a-b-c-0 of JobSet a-b and the gang of JobSet a-b-c-0": {
			managedBy: PodGroupsManagedByValue, uidKey: byOwner, parts: []string{PodGroupStageLabelKey},
			mine:   made{name(PodGroupName("a-b-c-0")), "a-b-c-0", "u2", nil},
			theirs: made{name(JobPodGroupName("a-b-c-0")), "a-b", "u1", nil},
			want:   Foreign,
		},
	}
	for n, tc := range cases {
		t.Run(n, func(t *testing.T) {
			if tc.mine.name != tc.theirs.name {
				t.Fatalf("names differ: %q and %q", tc.mine.name, tc.theirs.name)
			}
			id := tc.mine.identity(tc.managedBy, tc.uidKey, tc.parts)
			if got := id.Of(tc.theirs.object(tc.managedBy, tc.uidKey)); got != tc.want {
				t.Errorf("Of(the other's) = %v, want %v", got, tc.want)
			}
			if got := id.Of(tc.mine.object(tc.managedBy, tc.uidKey)); got != Own {
				t.Errorf("Of(its own) = %v, want own", got)
			}
		})
	}
}

func TestOwnership(t *testing.T) {
	id := Identity{
		ManagedBy: VolumeClaimsManagedByValue, JobSet: "pretrain", UID: "u2", UIDKey: VolumeClaimJobSetUIDAnnotationKey,
		Labels: perPod("ckpt", "w", "1", "0"), Parts: VolumeClaimPartLabelKeys,
	}
	meta := func(labels map[string]string, uid string) *metav1.ObjectMeta {
		o := &metav1.ObjectMeta{Labels: labels}
		if uid != "" {
			o.Annotations = map[string]string{VolumeClaimJobSetUIDAnnotationKey: uid}
		}
		return o
	}
	labels := func(jobSet string, parts map[string]string) map[string]string {
		l := map[string]string{ManagedByLabelKey: VolumeClaimsManagedByValue, JobSetNameLabelKey: jobSet}
		for k, v := range parts {
			l[k] = v
		}
		return l
	}
	cases := map[string]struct {
		id         Identity
		obj        *metav1.ObjectMeta
		want       Ownership
		wantHolder string
	}{
		"made for this JobSet": {
			id: id, obj: meta(labels("pretrain", perPod("ckpt", "w", "1", "0")), "u2"), want: Own,
			wantHolder: "JobSet pretrain (uid u2) for job-index=1, pod-index=0, replicatedjob=w, template=ckpt",
		},
		"left by an earlier pretrain, same part": {
			id: id, obj: meta(labels("pretrain", perPod("ckpt", "w", "1", "0")), "u1"), want: Retained,
			wantHolder: "JobSet pretrain (uid u1) for job-index=1, pod-index=0, replicatedjob=w, template=ckpt",
		},
		"same part, no UID (made before UIDs were written, or restored)": {
			id: id, obj: meta(labels("pretrain", perPod("ckpt", "w", "1", "0")), ""), want: Retained,
			wantHolder: "JobSet pretrain for job-index=1, pod-index=0, replicatedjob=w, template=ckpt",
		},
		"at admission, before the JobSet has a UID": {
			id: func() Identity { i := id; i.UID = ""; return i }(), obj: meta(labels("pretrain", perPod("ckpt", "w", "1", "0")), ""), want: Retained,
			wantHolder: "JobSet pretrain for job-index=1, pod-index=0, replicatedjob=w, template=ckpt",
		},
		"another JobSet's": {
			id: id, obj: meta(labels("gpt", perPod("ckpt", "w", "1", "0")), "u2"), want: Foreign,
			wantHolder: "JobSet gpt (uid u2) for job-index=1, pod-index=0, replicatedjob=w, template=ckpt",
		},
		"this JobSet's UID, another index": {
			id: id, obj: meta(labels("pretrain", perPod("ckpt", "w", "10", "0")), "u2"), want: Foreign,
			wantHolder: "JobSet pretrain (uid u2) for job-index=10, pod-index=0, replicatedjob=w, template=ckpt",
		},
		"a shared PVC where a per-pod one is wanted": {
			id: id, obj: meta(labels("pretrain", map[string]string{VolumeClaimTemplateLabelKey: "ckpt"}), "u2"), want: Foreign,
			wantHolder: "JobSet pretrain (uid u2) for template=ckpt",
		},
		"a per-pod PVC where a shared one is wanted": {
			id: func() Identity {
				i := id
				i.Labels = map[string]string{VolumeClaimTemplateLabelKey: "ckpt"}
				return i
			}(), obj: meta(labels("pretrain", perPod("ckpt", "w", "1", "0")), "u2"), want: Foreign,
			wantHolder: "JobSet pretrain (uid u2) for job-index=1, pod-index=0, replicatedjob=w, template=ckpt",
		},
		"no managed-by: a user's": {
			id: id, obj: meta(map[string]string{JobSetNameLabelKey: "pretrain"}, ""), want: Unmanaged,
			wantHolder: "an object not made by volumeclaims.jobset-addons.io",
		},
		"another add-on's managed-by": {
			id: id, obj: meta(map[string]string{ManagedByLabelKey: "Helm"}, ""), want: Unmanaged,
			wantHolder: "an object not made by volumeclaims.jobset-addons.io",
		},
		"the add-on's label without a JobSet": {
			id: id, obj: meta(map[string]string{ManagedByLabelKey: VolumeClaimsManagedByValue}, ""), want: Foreign,
			wantHolder: "no JobSet",
		},
	}
	for n, tc := range cases {
		t.Run(n, func(t *testing.T) {
			if diff := cmp.Diff(tc.want.String(), tc.id.Of(tc.obj).String()); diff != "" {
				t.Errorf("Of (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantHolder, tc.id.Holder(tc.obj)); diff != "" {
				t.Errorf("Holder (-want +got):\n%s", diff)
			}
		})
	}
}
