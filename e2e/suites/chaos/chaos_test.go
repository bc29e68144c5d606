package chaos_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	coschedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestChaos runs CHAOS_JOBSETS JobSets of the mix while every add-on gets CHAOS_KILLS of its
// replicas killed with SIGKILL at random moments (each restarted after a pause, as a Deployment
// would), then asserts the exact end state.
func TestChaos(t *testing.T) {
	f := features.New("chaos").Assess("every JobSet completes with exactly its objects", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		if err := waitProbe(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		c := framework.Client(t, cfg)
		ns := newNamespace(ctx, t, c, "chaos")
		users := userPVCs(ctx, t, c, ns)
		since := time.Now()

		// The killers: one per add-on, each killing a random replica CHAOS_KILLS times.
		var wg sync.WaitGroup
		var mu sync.Mutex
		kills := map[string][2]int{} // add-on: total kills, of which the leader
		done := make(chan struct{})
		for _, name := range framework.Addons {
			wg.Go(func() {
				r := replicas[name]
				for range chaosKills {
					select {
					case <-done:
						return
					case <-time.After(time.Duration(2000+rand.IntN(5000)) * time.Millisecond):
					}
					victim := rand.IntN(r.N)
					leader, ok := r.Leader(ctx)
					if err := r.Kill(victim); err != nil {
						t.Errorf("killing %s: %v", r.Proc(victim), err)
						return
					}
					mu.Lock()
					k := kills[name]
					k[0]++
					if ok && leader == victim {
						k[1]++
					}
					kills[name] = k
					mu.Unlock()
					time.Sleep(time.Duration(500+rand.IntN(1500)) * time.Millisecond)
					if err := r.Start(ctx, victim); err != nil {
						t.Errorf("restarting %s: %v", r.Proc(victim), err)
						return
					}
				}
			})
		}
		defer func() { close(done); wg.Wait() }()

		// The JobSets, spread over the time the kills take (about 7 s each), so that they overlap.
		pace := time.Duration(chaosKills) * 7 * time.Second / time.Duration(chaosJobSets)
		start := time.Now()
		var refusedTries int
		for i := range chaosJobSets {
			js := mixJobSet(ns, i)
			failed, _, err := createRetrying(ctx, c, js, 2*time.Minute)
			refusedTries += failed
			if err != nil {
				t.Fatalf("creating %s: %v", js.Name, err)
			}
			time.Sleep(pace)
		}
		waitAllCompleted(ctx, t, c, ns, chaosJobSets, 15*time.Minute)
		completedIn := time.Since(start)
		wg.Wait() // every kill done and every replica back
		t.Logf("all %d JobSets Completed in %s; create calls refused while a webhook was unreachable: %d",
			chaosJobSets, completedIn.Round(time.Second), refusedTries)
		for _, name := range framework.Addons {
			t.Logf("%-15s killed %d times (%d of them the leader)", name, kills[name][0], kills[name][1])
			if kills[name][0] != chaosKills {
				t.Errorf("%s was killed %d times, not %d", name, kills[name][0], chaosKills)
			}
		}

		want := expectations(chaosJobSets, users)
		got := settle(ctx, t, c, ns, want)
		checkUsers(ctx, t, c, ns, users)
		pods := checkPods(ctx, t, c, ns, chaosJobSets)
		creates := checkAudit(t, ns, since, want)
		t.Logf("end state: %d PVCs kept and %d deleted, %d claims kept and %d deleted, %d PodGroups made and deleted, "+
			"%d pods checked (volumes, claims, stage order), %d user PVCs untouched, %d creates audited (each object exactly once)",
			got.pvcsKept, got.pvcsGone, got.claimsKept, got.claimsGone, len(want.podGroups), pods, len(users), creates)
		return ctx
	}).Feature()
	testenv.Test(t, f)
}

// waitProbe waits until every add-on's webhooks answer.
func waitProbe(ctx context.Context, cfg *envconf.Config) error {
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if err = probeAll(ctx, cfg); err == nil {
			return nil
		}
	}
	return fmt.Errorf("the add-ons' webhooks do not answer: %w", err)
}

// userPVCs creates PVCs a user owns in ns: two unrelated ones, and, when the run has a Delete
// JobSet of shape 0 (index 4), one named as that JobSet's first per-pod PVC, which volumeclaims
// must mount and never delete. It returns their UIDs by name.
func userPVCs(ctx context.Context, t *testing.T, c client.Client, ns string) map[string]types.UID {
	names := []string{"user-scratch", "user-results"}
	if chaosJobSets > 4 {
		n, _ := contract.PerPodVolumeClaimName("ckpt", jobSetName(4), "worker", 0, 0)
		names = append(names, n)
	}
	uids := map[string]types.UID{}
	for _, n := range names {
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n, Labels: map[string]string{"owner": "user"}},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
		}
		framework.CreateAll(ctx, t, c, pvc)
		uids[n] = pvc.UID
	}
	return uids
}

func checkUsers(ctx context.Context, t *testing.T, c client.Client, ns string, users map[string]types.UID) {
	for n, uid := range users {
		var pvc corev1.PersistentVolumeClaim
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, &pvc); err != nil {
			t.Errorf("user PVC %s: %v", n, err)
			continue
		}
		if pvc.UID != uid || pvc.DeletionTimestamp != nil || pvc.Labels[contract.ManagedByLabelKey] != "" {
			t.Errorf("user PVC %s was touched: uid %s (was %s), deletion %v, labels %v", n, pvc.UID, uid, pvc.DeletionTimestamp, pvc.Labels)
		}
	}
}

// waitAllCompleted waits until every JobSet of ns, at least n, is Completed; it fails at once on
// a Failed one.
func waitAllCompleted(ctx context.Context, t *testing.T, c client.Client, ns string, n int, timeout time.Duration) {
	t.Helper()
	lastLog := time.Now()
	framework.Eventually(ctx, t, timeout, fmt.Sprintf("%d JobSets Completed", n), func(ctx context.Context) (bool, string, error) {
		var l jobsetv1alpha2.JobSetList
		if err := c.List(ctx, &l, client.InNamespace(ns)); err != nil {
			return false, err.Error(), nil
		}
		var completed []string
		var pending []string
		for _, js := range l.Items {
			switch {
			case apimeta.IsStatusConditionTrue(js.Status.Conditions, string(jobsetv1alpha2.JobSetFailed)):
				return false, "", fmt.Errorf("JobSet %s failed: %+v", js.Name, js.Status.Conditions)
			case apimeta.IsStatusConditionTrue(js.Status.Conditions, string(jobsetv1alpha2.JobSetCompleted)):
				completed = append(completed, js.Name)
			default:
				pending = append(pending, js.Name)
			}
		}
		msg := fmt.Sprintf("%d of %d Completed; waiting for %v", len(completed), max(n, len(l.Items)), pending)
		if time.Since(lastLog) > 30*time.Second {
			t.Log(msg)
			lastLog = time.Now()
		}
		return len(completed) >= n && len(pending) == 0, msg, nil
	})
}

// want is every object the run makes, by kind and name, and whether it must exist at the end.
type want struct {
	pvcs, claims map[string]bool
	// podGroups by kind ("podgroups.scheduling.volcano.sh", ...): all deleted at the end.
	podGroups map[string]string
	users     map[string]types.UID
}

func expectations(n int, users map[string]types.UID) want {
	w := want{pvcs: map[string]bool{}, claims: map[string]bool{}, podGroups: map[string]string{}, users: users}
	for i := range n {
		e := expectedOf(i)
		for k, v := range e.pvcs {
			w.pvcs[k] = v
		}
		for k, v := range e.claims {
			w.claims[k] = v
		}
		kind := map[int]string{1: "podgroups.scheduling.volcano.sh", 2: "podgroups.scheduling.x-k8s.io"}[i%shapes]
		for k := range e.podGroups {
			w.podGroups[k] = kind
		}
	}
	return w
}

type endState struct{ pvcsKept, pvcsGone, claimsKept, claimsGone int }

// settle waits until retention has run its course: the PVCs, claims and PodGroups of ns are
// exactly those that must stay (and the users'), each with our managed-by label.
func settle(ctx context.Context, t *testing.T, c client.Client, ns string, w want) endState {
	t.Helper()
	var s endState
	var last string
	framework.Eventually(ctx, t, 2*time.Minute, "the end state", func(ctx context.Context) (bool, string, error) {
		s = endState{}
		var problems []string
		var pvcs corev1.PersistentVolumeClaimList
		var claims resourcev1.ResourceClaimList
		var vpgs volcanov1beta1.PodGroupList
		var cpgs coschedv1alpha1.PodGroupList
		for _, l := range []client.ObjectList{&pvcs, &claims, &vpgs, &cpgs} {
			if err := c.List(ctx, l, client.InNamespace(ns)); err != nil {
				return false, last, nil
			}
		}
		// A PVC being deleted counts as deleted: the pvc-protection finalizer holds it while the
		// finished JobSet's pods exist. A user's being deleted is caught by checkUsers.
		have := map[string]bool{}
		for _, p := range pvcs.Items {
			if _, user := w.users[p.Name]; !user && p.DeletionTimestamp != nil {
				continue
			}
			have[p.Name] = true
			keep, ours := w.pvcs[p.Name]
			_, user := w.users[p.Name]
			switch {
			case user:
			case !ours:
				problems = append(problems, "unexpected PVC "+p.Name)
			case !keep:
				problems = append(problems, "PVC "+p.Name+" not deleted yet")
			case p.Labels[contract.ManagedByLabelKey] != contract.VolumeClaimsManagedByValue:
				problems = append(problems, "PVC "+p.Name+" lacks managed-by")
			}
		}
		for name, keep := range w.pvcs {
			if _, user := w.users[name]; user {
				continue
			}
			switch {
			case keep && !have[name]:
				problems = append(problems, "retained PVC "+name+" missing")
			case keep:
				s.pvcsKept++
			default:
				s.pvcsGone++
			}
		}
		have = map[string]bool{}
		for _, rc := range claims.Items {
			if rc.DeletionTimestamp != nil {
				continue
			}
			have[rc.Name] = true
			keep, ours := w.claims[rc.Name]
			switch {
			case !ours:
				problems = append(problems, "unexpected claim "+rc.Name)
			case !keep:
				problems = append(problems, "claim "+rc.Name+" not deleted yet")
			}
		}
		for name, keep := range w.claims {
			switch {
			case keep && !have[name]:
				problems = append(problems, "retained claim "+name+" missing")
			case keep:
				s.claimsKept++
			default:
				s.claimsGone++
			}
		}
		for _, pg := range vpgs.Items {
			problems = append(problems, "Volcano PodGroup "+pg.Name+" left")
		}
		for _, pg := range cpgs.Items {
			problems = append(problems, "coscheduling PodGroup "+pg.Name+" left")
		}
		slices.Sort(problems)
		if len(problems) > 10 {
			problems = append(problems[:10], fmt.Sprintf("and %d more", len(problems)-10))
		}
		last = strings.Join(problems, "; ")
		return len(problems) == 0, last, nil
	})
	return s
}

// checkPods checks every pod of the run: as many as the JobSets ask for, each with the PVC of
// its own index, its Job's claim and its gang's scheduler and name, and none of a later stage scheduled before every Job of the
// stage before it completed. It returns how many pods it checked.
func checkPods(ctx context.Context, t *testing.T, c client.Client, ns string, n int) int {
	t.Helper()
	var pods corev1.PodList
	var jobs batchv1.JobList
	if err := c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if err := c.List(ctx, &jobs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	completedAt := map[string]time.Time{} // jobset/replicatedjob: the last of its Jobs to complete
	for _, j := range jobs.Items {
		key := j.Labels[contract.JobSetNameLabelKey] + "/" + j.Labels[contract.ReplicatedJobNameLabelKey]
		if j.Status.CompletionTime == nil {
			t.Errorf("Job %s has not completed", j.Name)
			continue
		}
		if at := j.Status.CompletionTime.Time; at.After(completedAt[key]) {
			completedAt[key] = at
		}
	}
	byJobSet := map[string][]corev1.Pod{}
	for _, p := range pods.Items {
		byJobSet[p.Labels[contract.JobSetNameLabelKey]] = append(byJobSet[p.Labels[contract.JobSetNameLabelKey]], p)
	}
	checked := 0
	for i := range n {
		name := jobSetName(i)
		e := expectedOf(i)
		stages := stagesOf(i)
		wantPods := map[int]int{0: 4, 1: 5, 2: 5, 3: 4}[i%shapes]
		if got := len(byJobSet[name]); got != wantPods {
			t.Errorf("%s has %d pods, want %d", name, got, wantPods)
		}
		for _, p := range byJobSet[name] {
			checked++
			rj := p.Labels[contract.ReplicatedJobNameLabelKey]
			job, _ := strconv.Atoi(p.Labels[contract.JobIndexLabelKey])
			idx, _ := strconv.Atoi(p.Annotations[contract.JobCompletionIndexAnnotationKey])
			claimOf := map[string]string{}
			for _, v := range p.Spec.Volumes {
				if v.PersistentVolumeClaim != nil {
					claimOf[v.Name] = v.PersistentVolumeClaim.ClaimName
				}
			}
			if perPod, _ := contract.PerPodVolumeClaimName("ckpt", name, rj, job, idx); hasKey(e.pvcs, perPod) && claimOf["ckpt"] != perPod {
				t.Errorf("pod %s mounts ckpt from %q, want %s", p.Name, claimOf["ckpt"], perPod)
			}
			if shared, _ := contract.SharedVolumeClaimName("data", name); hasKey(e.pvcs, shared) && claimOf["data"] != shared {
				t.Errorf("pod %s mounts data from %q, want %s", p.Name, claimOf["data"], shared)
			}
			if claim, _ := contract.ResourceClaimName(fmt.Sprintf("%s-%s-%d", name, rj, job), "dev", 0); hasKey(e.claims, claim) &&
				!slices.ContainsFunc(p.Spec.ResourceClaims, func(rc corev1.PodResourceClaim) bool {
					return rc.Name == "dev" && rc.ResourceClaimName != nil && *rc.ResourceClaimName == claim
				}) {
				t.Errorf("pod %s has claims %+v, want dev from %s", p.Name, p.Spec.ResourceClaims, claim)
			}
			if want := map[int]string{1: framework.VolcanoSchedulerName, 2: framework.CoschedulingSchedulerName}[i%shapes]; want != "" &&
				(p.Spec.SchedulerName != want || p.Annotations[contract.VolcanoGroupNameAnnotationKey]+p.Labels[contract.CoschedulingPodGroupLabelKey] == "") {
				t.Errorf("pod %s has scheduler %q and no gang (annotations %v, labels %v), want %s", p.Name, p.Spec.SchedulerName, p.Annotations, p.Labels, want)
			}
			for s := 1; s < len(stages); s++ {
				if !slices.Contains(stages[s], rj) {
					continue
				}
				scheduled := podScheduledAt(&p)
				for _, before := range stages[s-1] {
					if done := completedAt[name+"/"+before]; scheduled.Before(done) {
						t.Errorf("stage released early: pod %s (%s) scheduled at %s, before %s completed at %s",
							p.Name, rj, scheduled.Format(time.RFC3339), before, done.Format(time.RFC3339))
					}
				}
			}
		}
	}
	return checked
}

func hasKey[V any](m map[string]V, k string) bool { _, ok := m[k]; return ok }

func podScheduledAt(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// creates is what the apiserver's audit log says the add-ons' creates in a namespace came to,
// by resource/name.
type creates struct {
	made map[string]int // answered 201 Created
	// lost: answered 5xx because the add-on was killed mid-request (504, context canceled).
	// The object may have been stored all the same: its caller never learnt, and its restart
	// found it (so no later create) or made it (a later 201).
	lost      map[string]int
	conflicts int // answered 409 AlreadyExists
}

// createsIn reads the add-ons' creates in ns since since from the apiserver's audit log.
func createsIn(t *testing.T, ns string, since time.Time) creates {
	t.Helper()
	audit, err := framework.AuditCreates(tb, since)
	if err != nil {
		t.Fatal(err)
	}
	cr := creates{made: map[string]int{}, lost: map[string]int{}}
	for _, a := range audit {
		if a.Namespace != ns {
			continue
		}
		switch k := a.Resource + "/" + a.Name; {
		case a.Code == 201:
			cr.made[k]++
		case a.Code == 409:
			cr.conflicts++
		case a.Code >= 500:
			cr.lost[k]++
		}
	}
	return cr
}

// checkAudit reads the apiserver's audit log: every PVC, claim and PodGroup of the run was
// created exactly once (one 201, or, when its creator was killed mid-request, no 201 and an
// answer lost with the caller: settle checked that it exists), the user's colliding PVC never,
// and nothing else was. It returns how many successful creates it read.
func checkAudit(t *testing.T, ns string, since time.Time, w want) int {
	t.Helper()
	cr := createsIn(t, ns, since)
	expect := map[string]bool{}
	for n := range w.pvcs {
		if _, user := w.users[n]; !user {
			expect["persistentvolumeclaims/"+n] = true
		}
	}
	for n := range w.claims {
		expect["resourceclaims.resource.k8s.io/"+n] = true
	}
	for n, kind := range w.podGroups {
		expect[kind+"/"+n] = true
	}
	total, lostOnly := 0, 0
	for k, count := range cr.made {
		total += count
		if !expect[k] {
			t.Errorf("audit: %s was created by an add-on, and should not have been", k)
		} else if count != 1 {
			t.Errorf("audit: %s was created %d times", k, count)
		}
	}
	for k := range cr.lost {
		if !expect[k] {
			t.Errorf("audit: an add-on tried to create %s, and should not have", k)
		}
	}
	for k := range expect {
		switch {
		case cr.made[k] > 0:
		case cr.lost[k] > 0:
			lostOnly++
		default:
			t.Errorf("audit: no create of %s", k)
		}
	}
	t.Logf("audit: %d objects created once each (%d of them by a request whose add-on was killed before the answer), %d create calls answered 409 AlreadyExists",
		len(cr.made)+lostOnly, lostOnly, cr.conflicts)
	return total + lostOnly
}
