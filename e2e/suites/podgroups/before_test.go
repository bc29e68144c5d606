package podgroups_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	coschedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestJobBeforeItsGang: JobSet train-stage-0's gang (the coscheduling PodGroup train-stage-0)
// cannot be made for a while (a policy refuses it, as a quota or a webhook may), so its Job
// comes before its gang. JobSet train (sequenced), created at the same moment (so that both are
// admitted), makes its stage 0's gang train-stage-0. No pod of train-stage-0 may ever name that
// gang while it is train's: the Job is held (its webhook makes the gang first, or holds the Job
// naming what it cannot make), and told PodGroupNameTaken once train's is there. Once train
// finished and its gang is gone, train-stage-0 gets its own and completes.
func TestJobBeforeItsGang(t *testing.T) {
	f := framework.NamespacedFeature("a Job that comes before its gang never joins another JobSet's gang of that name", "the Job waits, then runs in its own gang", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		const gang, message = "train-stage-0", "e2e: no PodGroup of JobSet train-stage-0 yet"
		policy := "e2e-no-gang-" + ns
		framework.DenyPolicy(ctx, t, c, policy, admissionregistrationv1.MatchResources{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			ObjectSelector:    &metav1.LabelSelector{MatchLabels: map[string]string{contract.JobSetNameLabelKey: gang}},
			ResourceRules:     framework.RulesOf(coschedv1alpha1.SchemeGroupVersion.Group, "podgroups", admissionregistrationv1.Create),
		}, "request.dryRun == true", message)
		framework.WaitRefused(ctx, t, c, message, func() client.Object {
			return &coschedv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe", Labels: map[string]string{contract.JobSetNameLabelKey: gang}}}
		})
		var mu sync.Mutex
		foreign := map[string]bool{}
		stop := framework.PollPods(ctx, c, func(pods []corev1.Pod) {
			for i := range pods {
				if pods[i].Labels[coschedv1alpha1.PodGroupLabel] == gang && coschedulingGang.holderNow(ctx, c, ns, gang) == "train" {
					mu.Lock()
					foreign[pods[i].Name] = true
					mu.Unlock()
				}
			}
		}, client.InNamespace(ns), client.MatchingLabels{contract.JobSetNameLabelKey: gang})
		defer stop()
		joined := func() []string {
			mu.Lock()
			defer mu.Unlock()
			return slices.Sorted(maps.Keys(foreign))
		}
		// Created at the same moment, both are admitted (neither is in podgroups' cache as the
		// other is judged): train-stage-0's Job comes before its gang, which the policy holds
		// back, and train makes its stage 0's gang train-stage-0.
		train, other := createdTogether(ctx, t, c, coschedulingGang, gang, func() (*jobsetv1alpha2.JobSet, *jobsetv1alpha2.JobSet) {
			return newJobSet(ns, "train", contract.SchedulerCoscheduling).InOrder().ReplicatedJobs(replicated("init", 1, 2, "15s"), replicated("main", 1, 2, "2s")).Obj(),
				newJobSet(ns, gang, contract.SchedulerCoscheduling).ReplicatedJobs(replicated("w", 1, 2, "3s")).Obj()
		})
		// Its Job comes: created (its pods then name whatever gang of the name appears), or held
		// for want of its gang.
		framework.Eventually(ctx, t, 30*time.Second, "Job train-stage-0-w-0 created, or held for want of its gang", func(ctx context.Context) (bool, string, error) {
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "train-stage-0-w-0"}, &batchv1.Job{}); err == nil {
				return true, "", nil
			}
			msgs, err := framework.EventMessages(ctx, c, other, "JobCreationFailed")
			return slices.ContainsFunc(msgs, func(m string) bool {
				return strings.Contains(m, "PodGroup "+gang+" does not exist yet and cannot be made") || strings.Contains(m, "exists and was made for JobSet train ")
			}), strings.Join(msgs, "; "), err
		})
		if got := coschedulingGang.holder(ctx, t, c, ns, gang); got != "train" {
			t.Fatalf("PodGroup %s is JobSet %q's, want train's", gang, got)
		}
		time.Sleep(3 * time.Second) // the pods of train-stage-0, were any created, are polled meanwhile
		if seen := joined(); len(seen) > 0 {
			t.Fatalf("pods %v of JobSet train-stage-0 name JobSet train's PodGroup %s: they join its gang", seen, gang)
		}
		var msgs []string
		framework.Eventually(ctx, t, time.Minute, "PodGroupNameTaken on train-stage-0", func(ctx context.Context) (bool, string, error) {
			var err error
			msgs, err = framework.EventMessages(ctx, c, other, "PodGroupNameTaken")
			return len(msgs) > 0, "", err
		})
		if !strings.Contains(msgs[0], "coscheduling PodGroup "+gang+" exists and was made for JobSet train ") {
			t.Errorf("PodGroupNameTaken %q: want it to name the PodGroup and JobSet train", msgs)
		}

		// The policy gone, train finished and its gang gone: train-stage-0 gets its own and runs.
		if err := c.Delete(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: policy}}); err != nil {
			t.Fatal(err)
		}
		framework.WaitJobSet(ctx, t, c, train, jobsetv1alpha2.JobSetCompleted)
		waitCompleted(ctx, t, c, other)
		stop()
		if seen := joined(); len(seen) > 0 {
			t.Fatalf("pods %v of JobSet train-stage-0 named JobSet train's PodGroup %s: they joined its gang", seen, gang)
		}
		return ctx
	})
	testenv.Test(t, f)
}

// coschedulingGang is the coscheduling gang kind of gangKinds.
var coschedulingGang = gangKinds[0]
