package resourceclaims_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// claimsOf lists the claims resourceclaims made for the JobSet jobSet.
func claimsOf(ctx context.Context, t *testing.T, c client.Client, ns, jobSet string) []resourcev1.ResourceClaim {
	t.Helper()
	claims, err := listClaims(ctx, c, ns, jobSet)
	if err != nil {
		t.Fatal(err)
	}
	return claims
}

func listClaims(ctx context.Context, c client.Client, ns, jobSet string) ([]resourcev1.ResourceClaim, error) {
	var list resourcev1.ResourceClaimList
	err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{
		contract.ManagedByLabelKey: contract.ResourceClaimsManagedByValue, contract.JobSetNameLabelKey: jobSet,
	})
	return list.Items, err
}

func claimNames(claims []resourcev1.ResourceClaim) []string {
	var names []string
	for _, c := range claims {
		names = append(names, c.Name)
	}
	sort.Strings(names)
	return names
}

// waitClaims waits until the JobSet's claims are exactly want (none when want is empty),
// counting no claim that is being deleted.
func waitClaims(ctx context.Context, t *testing.T, c client.Client, ns, jobSet string, want []string) {
	t.Helper()
	want = slices.Clone(want)
	sort.Strings(want)
	framework.Eventually(ctx, t, 90*time.Second, fmt.Sprintf("claims of %s are %v", jobSet, want), func(ctx context.Context) (bool, string, error) {
		var live []resourcev1.ResourceClaim
		claims, err := listClaims(ctx, c, ns, jobSet)
		if err != nil {
			return false, err.Error(), nil
		}
		for _, cl := range claims {
			if cl.DeletionTimestamp == nil {
				live = append(live, cl)
			}
		}
		got := claimNames(live)
		return slices.Equal(got, want), fmt.Sprintf("claims %v", got), nil
	})
}

// waitAllocated waits until each claim of want has been seen allocated at least once (the
// claims of short pods may be deleted soon after).
func waitAllocated(ctx context.Context, t *testing.T, c client.Client, ns, jobSet string, want []string) {
	t.Helper()
	seen := map[string]bool{}
	framework.Eventually(ctx, t, 90*time.Second, fmt.Sprintf("claims %v allocated", want), func(ctx context.Context) (bool, string, error) {
		claims, err := listClaims(ctx, c, ns, jobSet)
		if err != nil {
			return false, err.Error(), nil
		}
		for _, cl := range claims {
			if cl.Status.Allocation != nil {
				seen[cl.Name] = true
			}
		}
		var missing []string
		for _, w := range want {
			if !seen[w] {
				missing = append(missing, w)
			}
		}
		return len(missing) == 0, fmt.Sprintf("not allocated yet: %v", missing), nil
	})
}

func podsOf(ctx context.Context, t *testing.T, c client.Client, ns, jobSet string) []corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{contract.JobSetNameLabelKey: jobSet}); err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

// podClaims is what a pod references: pod-level claim name -> claim object name, and container
// -> the pod-level claims it names in resources.claims (sorted, joined by ",").
func podClaims(pod *corev1.Pod) (map[string]string, map[string]string) {
	pod_ := map[string]string{}
	for _, rc := range pod.Spec.ResourceClaims {
		pod_[rc.Name] = ptr.Deref(rc.ResourceClaimName, "template:"+ptr.Deref(rc.ResourceClaimTemplateName, ""))
	}
	containers := map[string]string{}
	for _, ct := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		var names []string
		for _, r := range ct.Resources.Claims {
			names = append(names, r.Name)
		}
		sort.Strings(names)
		containers[ct.Name] = strings.Join(names, ",")
	}
	return pod_, containers
}

// events lists the reasons of the events about the JobSet jobSet, with their notes.
func events(ctx context.Context, t *testing.T, c client.Client, ns, jobSet string) map[string][]string {
	t.Helper()
	var list eventsv1.EventList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		t.Log(err)
	}
	out := map[string][]string{}
	for _, e := range list.Items {
		if e.Regarding.Kind == "JobSet" && e.Regarding.Name == jobSet {
			out[e.Reason] = append(out[e.Reason], e.Note)
		}
	}
	return out
}

// waitEvent waits until the JobSet has an event of reason whose note contains text.
func waitEvent(ctx context.Context, t *testing.T, c client.Client, ns, jobSet, reason, text string) {
	t.Helper()
	framework.Eventually(ctx, t, 30*time.Second, fmt.Sprintf("event %s about %s", reason, jobSet), func(ctx context.Context) (bool, string, error) {
		ev := events(ctx, t, c, ns, jobSet)
		for _, note := range ev[reason] {
			if strings.Contains(note, text) {
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("events %v", ev), nil
	})
}

// waitOwnedByJobs waits until every claim of the JobSet has its Job as its one owner, the
// controller: claims made ahead of their Jobs are adopted.
func waitOwnedByJobs(ctx context.Context, t *testing.T, c client.Client, ns, jobSet string) {
	t.Helper()
	framework.Eventually(ctx, t, 30*time.Second, "claims owned by their Jobs", func(ctx context.Context) (bool, string, error) {
		claims, err := listClaims(ctx, c, ns, jobSet)
		for _, cl := range claims {
			refs := cl.OwnerReferences
			if len(refs) != 1 || refs[0].Kind != "Job" || !ptr.Deref(refs[0].Controller, false) || cl.Name != refs[0].Name+"-"+cl.Labels[contract.ResourceClaimTemplateLabelKey] {
				return false, fmt.Sprintf("claim %s: owners %+v", cl.Name, refs), err
			}
		}
		return err == nil, "", err
	})
}
