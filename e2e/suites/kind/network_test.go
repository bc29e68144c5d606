package kind_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/e2e/kindbed"
)

// TestRendezvousAcrossNodes is JobSet's network model on real pods, across nodes: the pods of a
// JobSet of 2 Jobs x 2 pods, spread over both workers, run the rendezvous program; every other
// rank resolves rank 0's JobSet DNS name to rank 0's own pod IP, through CoreDNS and JobSet's
// headless Service, and says hello from its own pod IP (no masquerade between nodes). A pod of
// the namespace resolves the kubernetes Service by name to its ClusterIP. The timeout is a
// minute: without a barrier, a rank that looks rank 0's name up before rank 0's IP is published
// gets "no such host", which kubeadm's CoreDNS configuration (kubernetes ttl 30, cache 30) caches
// for 30 s; on kind the ranks met some 30 s after they started.
func TestRendezvousAcrossNodes(t *testing.T) {
	f := framework.NamespacedFeature("pod network and DNS", "a rendezvous through JobSet DNS names across nodes", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		js := kindbed.JobSet(ns, "rdv", nil, 0, kindbed.Rendezvous("rdv", "node", 2, 2, time.Minute))
		if err := c.Create(ctx, js); err != nil {
			t.Fatal(err)
		}
		framework.WaitJobSet(ctx, t, c, js, jobsetv1alpha2.JobSetCompleted)
		if js.Status.Restarts != 0 {
			t.Errorf("JobSet restarts = %d, want 0", js.Status.Restarts)
		}
		checkRendezvousNetwork(ctx, t, c, js, "node", 4, 2)
		return ctx
	})
	testenv.Test(t, f)
}

// rank is pod p's rank in a rendezvous of pods pods per Job: job index * pods + completion index.
func rank(p *corev1.Pod, pods int) string {
	var job, idx int
	_, _ = fmt.Sscan(p.Labels["jobset.sigs.k8s.io/job-index"], &job)
	_, _ = fmt.Sscan(p.Annotations["batch.kubernetes.io/job-completion-index"], &idx)
	return fmt.Sprint(job*pods + idx)
}

// runPod runs script in a busybox pod of namespace ns until it ends and returns its log; the
// pod must succeed.
func runPod(ctx context.Context, t *testing.T, c client.Client, ns, name, script string) string {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{Name: "work", Image: kindbed.WorkloadImage, ImagePullPolicy: corev1.PullNever, Command: []string{"/bin/sh", "-c", script}}},
		},
	}
	if err := c.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(ctx, t, time.Minute, "pod "+name+" done", func(ctx context.Context) (bool, string, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return false, "", err
		}
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed, string(p.Status.Phase), nil
	})
	out := logs(ctx, t, p)
	if p.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("pod %s %s:\n%s", name, p.Status.Phase, out)
	}
	return out
}

// checkRendezvousNetwork checks, after a rendezvous JobSet js (ReplicatedJob rjob, pods pods of
// podsPerJob per Job: kindbed.Rendezvous) completed, JobSet's network model on real pods: the
// pods ran on every worker; every rank but 0 resolved rank 0's JobSet DNS name to rank 0's pod
// IP and reached it from its own pod IP, some from another node (no masquerade between nodes);
// and a pod of the namespace resolves the kubernetes Service by name to its ClusterIP.
func checkRendezvousNetwork(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet, rjob string, n, podsPerJob int) {
	t.Helper()
	all := pods(ctx, t, c, js)
	if len(all) != n {
		t.Fatalf("%d pods, want %d", len(all), n)
	}
	byRank := map[string]*corev1.Pod{}
	for i := range all {
		byRank[rank(&all[i], podsPerJob)] = &all[i]
	}
	where, nodes := placement(all)
	t.Logf("placement: %v", where)
	if w := workers(ctx, t, c); nodes < len(w) {
		t.Errorf("the %d pods ran on %d node(s) %v, want every worker %v", n, nodes, where, w)
	}
	lead := byRank["0"]
	if lead == nil {
		t.Fatalf("no rank 0 among %v", byRank)
	}
	l0 := logs(ctx, t, lead)
	t.Logf("rank 0 (%s on %s, %s):\n%s", lead.Name, lead.Spec.NodeName, lead.Status.PodIP, l0)
	name := fmt.Sprintf("%s-%s-0-0.%s", js.Name, rjob, js.Name)
	crossed := 0
	for _, m := range regexp.MustCompile(`hello from rank (\d+) at ([0-9.]+):`).FindAllStringSubmatch(l0, -1) {
		p := byRank[m[1]]
		if p == nil {
			t.Errorf("rank 0 heard from rank %s, which no pod is", m[1])
			continue
		}
		if m[2] != p.Status.PodIP {
			t.Errorf("rank %s (%s, pod IP %s) reached rank 0 from %s: not its own address", m[1], p.Name, p.Status.PodIP, m[2])
		}
		if p.Spec.NodeName != lead.Spec.NodeName {
			crossed++
		}
	}
	if crossed == 0 {
		t.Errorf("no rank on another node than rank 0 (%s) reached it", lead.Spec.NodeName)
	}
	for r, p := range byRank {
		if r != "0" && !strings.Contains(logs(ctx, t, p), fmt.Sprintf("%s is %s, connected", name, lead.Status.PodIP)) {
			t.Errorf("rank %s (%s) did not resolve %s to rank 0's pod IP %s: %s", r, p.Name, name, lead.Status.PodIP, logs(ctx, t, p))
		}
	}
	var svc corev1.Service
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "kubernetes"}, &svc); err != nil {
		t.Fatal(err)
	}
	out := runPod(ctx, t, c, js.Namespace, js.Name+"-lookup", "nslookup kubernetes.default.svc.cluster.local")
	if !strings.Contains(out, "Address: "+svc.Spec.ClusterIP) {
		t.Errorf("kubernetes.default.svc.cluster.local does not resolve to %s:\n%s", svc.Spec.ClusterIP, out)
	}
}
