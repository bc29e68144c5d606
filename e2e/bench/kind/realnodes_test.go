package kind_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/e2e/kindbed"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// BenchmarkRealNodes (make bench-kind) prints two first figures on real containers:
//   - one JobSet of 8 pods with all four add-ons (a per-pod PVC, a claim per Job, two stages
//     released on Ready, a coscheduling gang per stage), from create to every pod Running,
//     against the same JobSet without the add-ons' annotations, alternately, in the same run,
//     both with an emptyDir (plain) and with the per-pod PVC and claim Kubernetes makes itself
//     (native: a generic ephemeral volume and a ResourceClaimTemplate), so that the add-ons' own
//     cost is told apart from storage's and DRA's;
//   - the sequencer's hand-off: from the last container of a stage finishing to the first
//     container of the next one starting, over BENCH_HANDOFFS two-stage JobSets.
func BenchmarkRealNodes(b *testing.B) {
	ctx := context.Background()
	c, err := client.New(testenv.EnvConf().Client().RESTConfig(), client.Options{Scheme: framework.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: envconf.RandomName("bench-kind", 16)}}
	if err := c.Create(ctx, ns); err != nil {
		b.Fatal(err)
	}
	rounds := envInt("BENCH_ROUNDS", 5)
	took := map[variant][]time.Duration{}
	for r := 0; r < rounds; r++ {
		for k := range variants {
			v := variants[(r+k)%len(variants)] // each variant goes first in turn
			d, err := timeToRunning(ctx, c, ns.Name, fmt.Sprintf("r%d-%d", r, v), v)
			if err != nil {
				b.Fatal(err)
			}
			took[v] = append(took[v], d)
		}
	}
	with, unsequenced, ungang, builtin, without := took[allFour], took[noStages], took[noGang], took[native], took[plain]
	handoffs, err := handOffs(ctx, c, ns.Name, envInt("BENCH_HANDOFFS", 10))
	if err != nil {
		b.Fatal(err)
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "\nkind, a control plane and %d workers (%s)\tp50\tmax\trounds\n", kb.Workers, kb.NodeImage)
	fmt.Fprintf(w, "8 pods Running, all four add-ons\t%s\t%s\t%v\n", pct(with, 50), pct(with, 100), with)
	fmt.Fprintf(w, "8 pods Running, PVC + claim + one gang, no stages\t%s\t%s\t%v\n", pct(unsequenced, 50), pct(unsequenced, 100), unsequenced)
	fmt.Fprintf(w, "8 pods Running, PVC + claim only (default scheduler)\t%s\t%s\t%v\n", pct(ungang, 50), pct(ungang, 100), ungang)
	fmt.Fprintf(w, "8 pods Running, plain JobSet, Kubernetes' own per-pod PVC and claim\t%s\t%s\t%v\n", pct(builtin, 50), pct(builtin, 100), builtin)
	fmt.Fprintf(w, "8 pods Running, plain JobSet\t%s\t%s\t%v\n", pct(without, 50), pct(without, 100), without)
	fmt.Fprintf(w, "ratio all four / plain (p50; target <= 1.2; includes the Ready hand-off asked for)\t%.2f\t\t\n", float64(pct(with, 50))/float64(pct(without, 50)))
	fmt.Fprintf(w, "ratio no stages / plain (p50)\t%.2f\t\t\n", float64(pct(unsequenced, 50))/float64(pct(without, 50)))
	fmt.Fprintf(w, "ratio PVC + claim only / plain (p50; no second scheduler)\t%.2f\t\t\n", float64(pct(ungang, 50))/float64(pct(without, 50)))
	fmt.Fprintf(w, "ratio PVC + claim only / Kubernetes' own PVC and claim (p50; the add-ons' cost beside storage's and DRA's own)\t%.2f\t\t\n", float64(pct(ungang, 50))/float64(pct(builtin, 50)))
	fmt.Fprintf(w, "sequencer hand-off, stage done -> next container started\t%s\tp99 %s\t%d JobSets\n", pct(handoffs, 50), pct(handoffs, 99), len(handoffs))
	w.Flush()
	if err := c.Delete(ctx, ns); err != nil {
		b.Fatal(err)
	}
}

// variant is what the benchmark JobSet asks of the add-ons.
type variant int

const (
	allFour  variant = iota // per-pod PVC, claim per Job, two stages released on Ready, a gang per stage
	noStages                // the same but no sequencing: one gang of 8, both ReplicatedJobs at once
	noGang                  // PVC and claim only: no stages, no gang (the default scheduler alone)
	native                  // no annotation: Kubernetes' own per-pod PVC (a generic ephemeral volume of the same StorageClass) and per-pod claim (a ResourceClaimTemplate)
	plain                   // no annotation: an emptyDir where the PVC would be
)

var variants = []variant{allFour, noStages, noGang, native, plain}

// timeToRunning creates the benchmark JobSet of the variant and returns the time from its create
// to its 8th pod Running; it deletes it after.
func timeToRunning(ctx context.Context, c client.Client, ns, name string, v variant) (time.Duration, error) {
	addons := v != plain && v != native
	var ann map[string]string
	// One pod per Job: a claim shared by the pods of a coscheduling gang deadlocks in
	// scheduler-plugins v0.33.5 (docs/kind.md, limits).
	stage := func(n string) jobsetv1alpha2.ReplicatedJob {
		return kindbed.ReplicatedJob(n, 4, 1, "exec sleep 3600", "data")
	}
	first, second := stage("first"), stage("second")
	if addons {
		ann = map[string]string{
			contract.PoliciesAnnotationKey:        `[{targetReplicatedJobs: [first, second], templates: [{metadata: {name: data}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 8Mi}}}}]}]`,
			contract.ExecutionPolicyAnnotationKey: "InOrder",
			contract.WaitForAnnotationKey:         "Ready",
			contract.SchedulerAnnotationKey:       "coscheduling",
		}
		if v == noStages || v == noGang {
			delete(ann, contract.ExecutionPolicyAnnotationKey)
			delete(ann, contract.WaitForAnnotationKey)
		}
		if v == noGang {
			delete(ann, contract.SchedulerAnnotationKey)
		}
		claim := map[string]string{contract.TemplatesAnnotationKey: fmt.Sprintf(`[{metadata: {name: dev}, spec: {devices: {requests: [{name: dev, exactly: {deviceClassName: %s}}]}}}]`, kindbed.DeviceClass)}
		first.Template.Annotations, second.Template.Annotations = claim, claim
	} else if v == native {
		// The same pods, with what Kubernetes itself makes per pod: the PVC of a generic
		// ephemeral volume, and a ResourceClaim from a ResourceClaimTemplate.
		if err := ensureClaimTemplate(ctx, c, ns); err != nil {
			return 0, err
		}
		for _, rj := range []*jobsetv1alpha2.ReplicatedJob{&first, &second} {
			spec := &rj.Template.Spec.Template.Spec
			spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
				VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("8Mi")}},
				}},
			}}}}
			spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "dev", ResourceClaimTemplateName: ptr.To(nativeClaimTemplate)}}
			spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "dev"}}
		}
	} else {
		// The same pods, with an emptyDir where the add-on would give a PVC.
		for _, rj := range []*jobsetv1alpha2.ReplicatedJob{&first, &second} {
			rj.Template.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}
	}
	js := kindbed.JobSet(ns, name, ann, 0, first, second)
	start := time.Now()
	if err := c.Create(ctx, js); err != nil {
		return 0, err
	}
	var took time.Duration
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		var l corev1.PodList
		if err := c.List(ctx, &l, client.InNamespace(ns), client.MatchingLabels{contract.JobSetNameLabelKey: name}); err != nil {
			return false, err
		}
		n := 0
		for _, p := range l.Items {
			if p.Status.Phase == corev1.PodRunning {
				n++
			}
		}
		took = time.Since(start)
		return n == 8, nil
	})
	if err != nil {
		return 0, fmt.Errorf("JobSet %s (variant %d): 8 pods not Running: %w", name, v, err)
	}
	if err := c.Delete(ctx, js, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		return 0, err
	}
	return took, wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var l corev1.PodList
		err := c.List(ctx, &l, client.InNamespace(ns))
		return err == nil && len(l.Items) == 0, err
	})
}

// handOffs runs n two-stage sequenced JobSets (one pod per stage) one after another and returns,
// for each, the time from the first stage's pod being seen Succeeded to the second stage's
// container being seen started, both read by polling every 50ms (the kubelet's own container
// times are whole seconds).
func handOffs(ctx context.Context, c client.Client, ns string, n int) ([]time.Duration, error) {
	var out []time.Duration
	for i := 0; i < n; i++ {
		js := kindbed.JobSet(ns, fmt.Sprintf("handoff-%d", i), map[string]string{contract.ExecutionPolicyAnnotationKey: "InOrder"}, 0,
			kindbed.ReplicatedJob("first", 1, 1, "sleep 1"), kindbed.ReplicatedJob("second", 1, 1, "sleep 2"))
		if err := c.Create(ctx, js); err != nil {
			return nil, err
		}
		var done, started time.Time
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			var l corev1.PodList
			if err := c.List(ctx, &l, client.InNamespace(ns), client.MatchingLabels{contract.JobSetNameLabelKey: js.Name}); err != nil {
				return false, err
			}
			now := time.Now()
			for _, p := range l.Items {
				switch {
				case p.Labels[contract.ReplicatedJobNameLabelKey] == "first" && p.Status.Phase == corev1.PodSucceeded && done.IsZero():
					done = now
				case p.Labels[contract.ReplicatedJobNameLabelKey] == "second" && started.IsZero() && len(p.Status.ContainerStatuses) > 0 &&
					(p.Status.ContainerStatuses[0].State.Running != nil || p.Status.ContainerStatuses[0].State.Terminated != nil):
					started = now
				}
			}
			return !done.IsZero() && !started.IsZero(), nil
		})
		if err != nil {
			return nil, fmt.Errorf("hand-off JobSet %s: %w", js.Name, err)
		}
		out = append(out, started.Sub(done))
		if err := c.Delete(ctx, js, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	if i > 0 {
		i--
	}
	return s[i].Round(time.Millisecond)
}

func envInt(key string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(key)); err == nil && n > 0 {
		return n
	}
	return def
}

// nativeClaimTemplate is the ResourceClaimTemplate of the native variant: one device of the DRA
// driver, as the add-on's claim per Job asks.
const nativeClaimTemplate = "dev"

func ensureClaimTemplate(ctx context.Context, c client.Client, ns string) error {
	t := &resourcev1.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: nativeClaimTemplate},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: "dev", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: kindbed.DeviceClass}}},
		}}},
	}
	return client.IgnoreAlreadyExists(c.Create(ctx, t))
}
