package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	coschedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, jobsetv1alpha2.AddToScheme, volcanov1beta1.AddToScheme, coschedv1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

func clientcmdContext(namespace string) clientcmdapi.Context {
	return clientcmdapi.Context{Namespace: namespace}
}

// Status prints what the add-ons did to the JobSet ns/name. A kind the cluster does not serve
// (no DRA, no PodGroup CRD) is reported as such, not as an error.
func Status(ctx context.Context, c client.Client, ns, name string, events int, out io.Writer) error {
	js := &jobsetv1alpha2.JobSet{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, js); err != nil {
		return err
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	defer w.Flush()
	fmt.Fprintf(w, "JobSet %s/%s: %s, restarts %d\n", ns, name, state(js), js.Status.Restarts)
	if contract.ManagedElsewhere(js.Spec.ManagedBy) {
		managedElsewhere(ctx, c, w, js)
	}
	of := client.MatchingLabels{contract.JobSetNameLabelKey: name}

	section(w, "PersistentVolumeClaims (volumeclaims)")
	var pvcs corev1.PersistentVolumeClaimList
	if err := c.List(ctx, &pvcs, client.InNamespace(ns), of, client.MatchingLabels{contract.ManagedByLabelKey: contract.VolumeClaimsManagedByValue}); err != nil {
		return err
	}
	holders, err := pvcHolders(ctx, c, ns, name, pvcs.Items)
	if err != nil {
		return err
	}
	exp := expiryColumn(pvcs.Items, js, time.Now())
	rows(w, "NAME\tSTATUS\tTEMPLATE\tREPLICATEDJOB\tJOB\tPOD\t"+exp.header+"HELD BY", len(pvcs.Items), func(i int) string {
		p := pvcs.Items[i]
		l := p.Labels
		phase := string(p.Status.Phase)
		if p.DeletionTimestamp != nil {
			phase = "Terminating"
		}
		return strings.Join([]string{p.Name, phase, l[contract.VolumeClaimTemplateLabelKey],
			dash(l[contract.VolumeClaimReplicatedJobLabelKey]), dash(l[contract.VolumeClaimJobIndexLabelKey]), dash(l[contract.VolumeClaimPodIndexLabelKey]),
			exp.cell(&p) + dash(holders[p.Name])}, "\t")
	})

	section(w, "ResourceClaims (resourceclaims)")
	var claims resourcev1.ResourceClaimList
	err = c.List(ctx, &claims, client.InNamespace(ns), of, client.MatchingLabels{contract.ManagedByLabelKey: contract.ResourceClaimsManagedByValue})
	switch {
	case apimeta.IsNoMatchError(err):
		fmt.Fprintln(w, "  (resource.k8s.io/v1 is not served)")
	case err != nil:
		return err
	default:
		rows(w, "NAME\tALLOCATED\tTEMPLATE\tJOB\tRESERVED FOR", len(claims.Items), func(i int) string {
			cl := claims.Items[i]
			owner := "-"
			if ref := ownerName(cl.OwnerReferences); ref != "" {
				owner = ref
			}
			return strings.Join([]string{cl.Name, strconv.FormatBool(cl.Status.Allocation != nil), cl.Labels[contract.ResourceClaimTemplateLabelKey],
				owner, strconv.Itoa(len(cl.Status.ReservedFor))}, "\t")
		})
	}

	section(w, "Stages (sequencer)")
	if err := stages(ctx, c, w, js); err != nil {
		return err
	}

	section(w, "Start barriers (sequencer)")
	if err := barriers(ctx, c, w, js); err != nil {
		return err
	}

	section(w, "PodGroups (podgroups)")
	if err := podGroups(ctx, c, w, ns, of); err != nil {
		return err
	}

	var list corev1.EventList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return err
	}
	var evs []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.UID == js.UID {
			evs = append(evs, e)
		}
	}
	slices.SortFunc(evs, func(a, b corev1.Event) int { return eventTime(a).Compare(eventTime(b)) })
	told(w, evs, "Refused by the API server (not made; the pods that need them wait, or are not created)", refusedReasons)
	told(w, evs, "Blocked (the pods that wait can never all be there until this is fixed)", blockedReasons)
	told(w, evs, "Names another JobSet holds (never used for this one; rename, or delete that object)", takenReasons)
	evs = evs[max(0, len(evs)-events):]
	section(w, fmt.Sprintf("Last %d Events", events))
	rows(w, "AGE\tTYPE\tREASON\tMESSAGE", len(evs), func(i int) string {
		e := evs[i]
		return strings.Join([]string{age(eventTime(e)), e.Type, e.Reason, cut(e.Message, 120)}, "\t")
	})
	return nil
}

// pvcHolders says, for each Terminating PVC, what keeps it from going away: the pods of the
// JobSet that ran with it (Kubernetes' pvc-protection holds a PVC while any such pod exists,
// finished or not), e.g. "3 pods (3 finished): w-0-0-x, ...".
func pvcHolders(ctx context.Context, c client.Client, ns, jobSet string, pvcs []corev1.PersistentVolumeClaim) (map[string]string, error) {
	terminating := sets.New[string]()
	for _, p := range pvcs {
		if p.DeletionTimestamp != nil {
			terminating.Insert(p.Name)
		}
	}
	if terminating.Len() == 0 {
		return nil, nil
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{contract.JobSetNameLabelKey: jobSet}); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for name := range terminating {
		out[name] = "no pod of the JobSet (a finalizer)"
	}
	for name, ps := range jobsets.PVCHolders(pods.Items, terminating) {
		finished := 0
		podNames := make([]string, len(ps))
		for i, p := range ps {
			if jobsets.PodFinished(p) {
				finished++
			}
			podNames[i] = p.Name
		}
		slices.Sort(podNames)
		out[name] = cut(fmt.Sprintf("%d pods (%d finished): %s", len(ps), finished, strings.Join(podNames, ", ")), 80)
	}
	return out, nil
}

// stages prints contract.Stages of the JobSet, what each waits for, whether the sequencer
// released it in the current attempt, and how many of its pods are still gated.
func stages(ctx context.Context, c client.Client, w io.Writer, js *jobsetv1alpha2.JobSet) error {
	st, errs := jobsets.Stages(js)
	if len(errs) > 0 {
		fmt.Fprintf(w, "  (the sequencing does not parse: %v)\n", errs.ToAggregate())
		return nil
	}
	if len(st) < 2 {
		fmt.Fprintln(w, "  (not sequenced: one stage)")
		return nil
	}
	var released contract.Released
	if v, ok := js.Annotations[contract.ReleasedAnnotationKey]; ok {
		released, _ = contract.ParseReleased(v, nil)
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(js.Namespace), client.MatchingLabels{contract.JobSetNameLabelKey: js.Name}); err != nil {
		return err
	}
	gated := map[string]int{}
	for _, p := range pods.Items {
		for _, g := range p.Spec.SchedulingGates {
			if g.Name == contract.SequencerSchedulingGateValue {
				gated[p.Labels[contract.ReplicatedJobNameLabelKey]]++
			}
		}
	}
	rows(w, "STAGE\tREPLICATEDJOBS\tWAITS FOR\tRELEASED\tGATED PODS", len(st), func(i int) string {
		s := st[i]
		var deps []string
		for _, d := range s.DependsOn {
			deps = append(deps, d.Name+" "+string(d.Status))
		}
		rel := "yes"
		switch {
		case s.Index > 0 && !s.Gated:
			rel = "by upstream dependsOn"
		case s.Index > 0 && (released.RestartAttempt != js.Status.Restarts || !released.StageReleased(s)):
			rel = "no"
		}
		n := 0
		for _, rj := range s.ReplicatedJobs {
			n += gated[rj]
		}
		return strings.Join([]string{strconv.Itoa(s.Index), strings.Join(s.ReplicatedJobs, ","), dash(strings.Join(deps, ", ")), rel, strconv.Itoa(n)}, "\t")
	})
	return nil
}

// barriers prints the JobSet's start barriers of its current restart attempt: how many pods
// each waits for, how many wait at it, whether it is open, and who it waits for.
func barriers(ctx context.Context, c client.Client, w io.Writer, js *jobsetv1alpha2.JobSet) error {
	value, ok := js.Annotations[contract.StartBarrierAnnotationKey]
	if !ok {
		fmt.Fprintln(w, "  (no start barrier)")
		return nil
	}
	_, errs := contract.ParseStartBarrier(value, nil)
	st, serrs := jobsets.Stages(js)
	if errs = append(errs, serrs...); len(errs) > 0 {
		fmt.Fprintf(w, "  (the start barrier does not parse: %v)\n", errs.ToAggregate())
		return nil
	}
	var opened contract.BarriersOpened
	if v, ok := js.Annotations[contract.StartBarrierOpenedAnnotationKey]; ok {
		opened, _ = contract.ParseBarriersOpened(v, nil)
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(js.Namespace), client.MatchingLabels{contract.JobSetNameLabelKey: js.Name}); err != nil {
		return err
	}
	// Which pods count, and the attempt, as the sequencer decides: by the Jobs the JobSet made.
	var jobs batchv1.JobList
	if err := c.List(ctx, &jobs, client.InNamespace(js.Namespace), client.MatchingLabels{contract.JobSetNameLabelKey: js.Name}); err != nil {
		return err
	}
	of := jobsets.MembersOf(js, jobs.Items)
	attempt := of.Attempt(js)
	groups := jobsets.BarrierGroups(js, st)
	nodes := nodesDown(ctx, c)
	rows(w, "BARRIER\tATTEMPT\tPODS\tWAITING\tOPEN\tWAITS FOR", len(groups), func(i int) string {
		g := groups[i]
		var members []*corev1.Pod
		down := map[string]string{}
		waiting := 0
		for j := range pods.Items {
			p := &pods.Items[j]
			rj, a, ok := of.PodOf(p)
			if ok && p.DeletionTimestamp == nil && !jobsets.PodFinished(p) && a == attempt && slices.Contains(g.ReplicatedJobs, rj) {
				members = append(members, p)
				// A pod on a node that cannot answer shows what its kubelet last wrote: it does
				// not count as waiting, as the sequencer's barrier does not count it.
				if why := nodes(p.Spec.NodeName); why != "" {
					down[p.Name] = why
				} else if _, ok := jobsets.AtBarrier(p); ok {
					waiting++
				}
			}
		}
		open, waitsFor := "no", jobsets.NotWaiting(members, down, g.Pods, 5)
		if run, _ := jobsets.BarrierRun(js); opened.For(attempt, run) && opened.Has(g.Name) {
			open, waitsFor = "yes", ""
		}
		return strings.Join([]string{g.Name, strconv.Itoa(int(attempt)), strconv.Itoa(int(g.Pods)), strconv.Itoa(waiting), open, dash(waitsFor)}, "\t")
	})
	return nil
}

// nodesDown says, for each node name it is asked about (once each), why what its kubelet last
// wrote cannot be trusted (addon.NodeDown), "" when it can or cannot be read (a user without
// the right to get Nodes sees the pods as they report themselves).
func nodesDown(ctx context.Context, c client.Reader) func(string) string {
	seen := map[string]string{}
	return func(name string) string {
		if why, ok := seen[name]; ok {
			return why
		}
		why, _ := addon.NodeDown(ctx, c, name)
		seen[name] = why
		return why
	}
}

// podGroups prints the JobSet's PodGroups of the kinds that the cluster serves (Volcano's,
// coscheduling's, Kubernetes' own; for the last, MINMEMBER is the gang's minCount).
func podGroups(ctx context.Context, c client.Client, w io.Writer, ns string, of client.MatchingLabels) error {
	type pg struct {
		kind, name, stage, phase string
		minMember                int32
	}
	var all []pg
	served := 0
	opts := []client.ListOption{client.InNamespace(ns), of, client.MatchingLabels{contract.ManagedByLabelKey: contract.PodGroupsManagedByValue}}
	// list lists one kind into l, and tells whether the cluster serves it.
	list := func(l client.ObjectList) (bool, error) {
		switch err := c.List(ctx, l, opts...); {
		case apimeta.IsNoMatchError(err):
			return false, nil
		case err != nil:
			return false, err
		}
		served++
		return true, nil
	}
	var vl volcanov1beta1.PodGroupList
	if ok, err := list(&vl); err != nil {
		return err
	} else if ok {
		for _, p := range vl.Items {
			all = append(all, pg{"volcano", p.Name, p.Labels[contract.PodGroupStageLabelKey], string(p.Status.Phase), p.Spec.MinMember})
		}
	}
	var cl coschedv1alpha1.PodGroupList
	if ok, err := list(&cl); err != nil {
		return err
	} else if ok {
		for _, p := range cl.Items {
			all = append(all, pg{"coscheduling", p.Name, p.Labels[contract.PodGroupStageLabelKey], string(p.Status.Phase), p.Spec.MinMember})
		}
	}
	var kl schedulingv1beta1.PodGroupList
	if ok, err := list(&kl); err != nil {
		return err
	} else if ok {
		for _, p := range kl.Items {
			var minCount int32
			if g := p.Spec.SchedulingPolicy.Gang; g != nil {
				minCount = g.MinCount
			}
			phase := ""
			if cond := apimeta.FindStatusCondition(p.Status.Conditions, "PodGroupInitiallyScheduled"); cond != nil {
				phase = "Scheduled"
				if cond.Status != metav1.ConditionTrue {
					phase = cond.Reason
				}
			}
			all = append(all, pg{"kubernetes", p.Name, p.Labels[contract.PodGroupStageLabelKey], phase, minCount})
		}
	}
	if served == 0 {
		fmt.Fprintln(w, "  (no PodGroup CRD is served)")
		return nil
	}
	rows(w, "NAME\tSCHEDULER\tSTAGE\tMINMEMBER\tPHASE", len(all), func(i int) string {
		p := all[i]
		return strings.Join([]string{p.name, p.kind, dash(p.stage), strconv.Itoa(int(p.minMember)), dash(p.phase)}, "\t")
	})
	return nil
}

func section(w io.Writer, title string) { fmt.Fprintf(w, "\n%s\n", title) }

// refusedReasons are the reasons of the Warnings an add-on emits, once per template and cause,
// when the API server refuses for good the objects it makes for the JobSet (the volumeclaims and
// resourceclaims controllers' ReasonRefused), or refuses the pods the JobSet's Jobs create
// because of what an add-on put in them (PodsRefused: a PVC of volumeclaims, a claim of
// resourceclaims, the sequencer's start barrier container).
var refusedReasons = []string{"VolumeClaimsRefused", "ResourceClaimsRefused", "PodGroupsRefused", "PodsRefused"}

// takenReasons are the reasons of the Warnings an add-on emits when an object of a name it makes
// for the JobSet exists and is another JobSet's (names are joined with "-"): it is neither used
// nor changed, and what needs it waits (VolumeClaimNameTaken) or goes without it.
var takenReasons = []string{"VolumeClaimNameTaken", "ResourceClaimNameTaken", "PodGroupNameTaken", "WorkloadNameTaken"}

// blockedReasons are the reasons of the Warnings the sequencer gives when a start barrier cannot
// open because a pod of it is stuck before it (its ReasonBarrierBlocked).
var blockedReasons = []string{"StartBarrierBlocked"}

// told prints, under title, when there are any, the Warnings of reasons among evs, however old:
// each is told once, and the JobSet waits on it for as long as it lives.
func told(w io.Writer, evs []corev1.Event, title string, reasons []string) {
	var found []corev1.Event
	for _, e := range evs {
		if e.Type == corev1.EventTypeWarning && slices.Contains(reasons, e.Reason) {
			found = append(found, e)
		}
	}
	if len(found) == 0 {
		return
	}
	section(w, title)
	rows(w, "AGE\tREASON\tMESSAGE", len(found), func(i int) string {
		e := found[i]
		return strings.Join([]string{age(eventTime(e)), e.Reason, cut(e.Message, 600)}, "\t")
	})
}

// rows prints a header and n rows, indented, or "(none)".
func rows(w io.Writer, header string, n int, row func(i int) string) {
	if n == 0 {
		fmt.Fprintln(w, "  (none)")
		return
	}
	fmt.Fprintln(w, "  "+header)
	for i := range n {
		fmt.Fprintln(w, "  "+row(i))
	}
}

func state(js *jobsetv1alpha2.JobSet) string {
	for _, t := range []jobsetv1alpha2.JobSetConditionType{jobsetv1alpha2.JobSetCompleted, jobsetv1alpha2.JobSetFailed, jobsetv1alpha2.JobSetSuspended} {
		if apimeta.IsStatusConditionTrue(js.Status.Conditions, string(t)) {
			return string(t)
		}
	}
	return "Running"
}

func ownerName(refs []metav1.OwnerReference) string {
	for _, r := range refs {
		if r.Controller != nil && *r.Controller {
			return r.Kind + "/" + r.Name
		}
	}
	return ""
}

func eventTime(e corev1.Event) time.Time {
	for _, t := range []time.Time{e.EventTime.Time, e.LastTimestamp.Time, e.FirstTimestamp.Time, e.CreationTimestamp.Time} {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}

func age(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return time.Since(t).Round(time.Second).String()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
