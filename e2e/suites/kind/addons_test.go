package kind_test

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/e2e/kindbed"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

var addons = []string{"volumeclaims", "resourceclaims", "sequencer", "podgroups"}

// TestAddonPods: every add-on runs from its image as the chart deploys it, Ready, with the
// chart's securityContext in force as the kernel sees it (read from /proc of the container's
// process on the node), and its memory is reported. From a release (make release-check), the
// image is the release's, pinned by digest, and that very digest was pulled from its registry.
func TestAddonPods(t *testing.T) {
	f := features.New("add-on pods").Assess("Ready, hardened, measured", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		for _, name := range addons {
			p := addonPod(ctx, t, c, name)
			ready := false
			for _, cond := range p.Status.Conditions {
				ready = ready || (cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue)
			}
			if !ready {
				t.Errorf("%s: pod %s is not Ready: %+v", name, p.Name, p.Status.Conditions)
			}
			checkImage(t, name, p)
			st := procStatus(ctx, t, p)
			want := map[string]string{
				"Uid":        "65532\t65532\t65532\t65532", // runAsUser, every id
				"Gid":        "65532\t65532\t65532\t65532", // runAsGroup
				"CapEff":     "0000000000000000",           // capabilities: drop ALL
				"CapPrm":     "0000000000000000",
				"CapBnd":     "0000000000000000",
				"NoNewPrivs": "1", // allowPrivilegeEscalation: false
				"Seccomp":    "2", // seccompProfile RuntimeDefault: filter mode
			}
			for k, v := range want {
				if st[k] != v {
					t.Errorf("%s: /proc/<pid>/status %s = %q, want %q", name, k, st[k], v)
				}
			}
			root := rootMount(ctx, t, p)
			if !strings.HasPrefix(root, "ro,") && !strings.Contains(root, ",ro,") && root != "ro" {
				t.Errorf("%s: the container's / is mounted %q, want read-only (readOnlyRootFilesystem)", name, root)
			}
			t.Logf("%s: pod %s Ready; in the container: Uid %s, CapEff %s, NoNewPrivs %s, Seccomp %s, / %s; VmRSS %s, VmHWM %s",
				name, p.Name, strings.Fields(st["Uid"])[0], st["CapEff"], st["NoNewPrivs"], st["Seccomp"], root, st["VmRSS"], st["VmHWM"])
		}
		return ctx
	}).Feature()
	testenv.Test(t, f)
}

// TestWebhooksThroughServices: each add-on's webhook configurations point at its Service, with
// the CA that its cert-controller made in the cluster; the API server reaches each of them
// there: a JobSet with a bad value of each add-on's annotation is refused by that add-on, naming
// the field.
func TestWebhooksThroughServices(t *testing.T) {
	f := framework.NamespacedFeature("webhooks", "reached through Services, certificates made in-cluster", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		for _, name := range addons {
			checkWebhookCA(ctx, t, c, name)
		}
		bad := map[string]func() client.Object{
			"volumeclaims": func() client.Object {
				return kindbed.JobSet(ns, "bad-volumeclaims", map[string]string{contract.PoliciesAnnotationKey: `[{templates: [{metadata: {name: nomount}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Mi}}}}]}]`}, 0,
					kindbed.ReplicatedJob("w", 1, 1, "true"))
			},
			"resourceclaims": func() client.Object {
				rj := kindbed.ReplicatedJob("w", 1, 1, "true")
				rj.Template.Annotations = map[string]string{contract.TemplatesAnnotationKey: `[{metadata: {name: gpu}, spec: {}, whenJobFinished: Sometimes}]`}
				return kindbed.JobSet(ns, "bad-resourceclaims", nil, 0, rj)
			},
			"sequencer": func() client.Object {
				return kindbed.JobSet(ns, "bad-sequencer", map[string]string{contract.ExecutionPolicyAnnotationKey: "Sideways"}, 0, kindbed.ReplicatedJob("w", 1, 1, "true"))
			},
			"podgroups": func() client.Object {
				return kindbed.JobSet(ns, "bad-podgroups", map[string]string{contract.SchedulerAnnotationKey: "nope"}, 0, kindbed.ReplicatedJob("w", 1, 1, "true"))
			},
		}
		for _, name := range addons {
			err := c.Create(ctx, bad[name]())
			if err == nil || !strings.Contains(err.Error(), name+".jobset-addons.io") || !strings.Contains(err.Error(), "metadata.annotations[") &&
				!strings.Contains(err.Error(), "spec.replicatedJobs[0]") {
				t.Errorf("%s: a bad annotation was not refused by its webhook naming the field: %v", name, err)
				continue
			}
			t.Logf("%s: refused through its Service: %v", name, err)
		}
		return ctx
	})
	testenv.Test(t, f)
}

// checkWebhookCA checks that every webhook of the add-on's configurations calls its Service
// with the CA of the Secret cert-controller filled in the cluster.
func checkWebhookCA(ctx context.Context, t *testing.T, c client.Client, name string) {
	t.Helper()
	var secret corev1.Secret
	key := client.ObjectKey{Namespace: kindbed.AddonsNamespace, Name: "jobset-addons-" + name + "-webhook-cert"}
	if err := c.Get(ctx, key, &secret); err != nil {
		t.Fatalf("%s: certificate Secret: %v", name, err)
	}
	ca := secret.Data["ca.crt"]
	if len(ca) == 0 || len(secret.Data["tls.crt"]) == 0 || len(secret.Data["tls.key"]) == 0 {
		t.Fatalf("%s: Secret %s holds no certificate (keys %d)", name, key, len(secret.Data))
	}
	service := "jobset-addons-" + name + "-webhook"
	n := 0
	check := func(cfgName, hook string, cc admissionregistrationv1.WebhookClientConfig) {
		if cc.Service == nil || cc.Service.Name != service {
			return
		}
		n++
		if cc.Service.Namespace != kindbed.AddonsNamespace || cc.URL != nil {
			t.Errorf("%s: webhook %s/%s calls %+v, want Service %s/%s", name, cfgName, hook, cc.Service, kindbed.AddonsNamespace, service)
		}
		if !bytes.Equal(cc.CABundle, ca) {
			t.Errorf("%s: webhook %s/%s caBundle is not the CA cert-controller made in Secret %s", name, cfgName, hook, key.Name)
		}
	}
	var ms admissionregistrationv1.MutatingWebhookConfigurationList
	var vs admissionregistrationv1.ValidatingWebhookConfigurationList
	if err := c.List(ctx, &ms); err != nil {
		t.Fatal(err)
	}
	if err := c.List(ctx, &vs); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms.Items {
		for _, w := range m.Webhooks {
			check(m.Name, w.Name, w.ClientConfig)
		}
	}
	for _, v := range vs.Items {
		for _, w := range v.Webhooks {
			check(v.Name, w.Name, w.ClientConfig)
		}
	}
	if n == 0 {
		t.Errorf("%s: no webhook calls Service %s", name, service)
	}
}

// addonPod returns the one pod of the add-on's Deployment.
// checkImage: the add-on's container runs the image the chart names, which is, from a release,
// <registry>/<prefix>/<name>:<tag>@sha256:..., the node's containerd having pulled that digest;
// else the image built here and loaded, never pulled.
func checkImage(t *testing.T, name string, p *corev1.Pod) {
	t.Helper()
	image := p.Spec.Containers[0].Image
	var id string
	if len(p.Status.ContainerStatuses) > 0 {
		id = p.Status.ContainerStatuses[0].ImageID
	}
	if !kb.Release() {
		if want := "kind.local/" + name + ":e2e"; image != want {
			t.Errorf("%s: runs %s, want the image loaded into the node, %s", name, image, want)
		}
		return
	}
	_, digest, pinned := strings.Cut(image, "@")
	if !strings.HasPrefix(image, kb.Registry+"/") || !pinned || !strings.HasPrefix(digest, "sha256:") {
		t.Errorf("%s: runs %s, want an image of the release's registry %s pinned by digest", name, image, kb.Registry)
		return
	}
	if !strings.HasSuffix(id, "@"+digest) {
		t.Errorf("%s: the node ran image %q, want the digest the chart pins, %s", name, id, digest)
	}
	t.Logf("%s: runs %s; the node pulled %s", name, image, id)
}

func addonPod(ctx context.Context, t *testing.T, c client.Client, name string) *corev1.Pod {
	t.Helper()
	var l corev1.PodList
	if err := c.List(ctx, &l, client.InNamespace(kindbed.AddonsNamespace), client.MatchingLabels{"app.kubernetes.io/component": name}); err != nil {
		t.Fatal(err)
	}
	var live []corev1.Pod
	for _, p := range l.Items {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	if len(live) != 1 {
		t.Fatalf("%s: %d pods, want 1", name, len(live))
	}
	return &live[0]
}

// containerPID is the node's PID of the first container of pod p, from the CRI.
func containerPID(ctx context.Context, t *testing.T, p *corev1.Pod) int {
	t.Helper()
	ctr := p.Spec.Containers[0].Name
	ids, err := kb.Exec(ctx, p.Spec.NodeName, "crictl", "ps", "-q", "--state", "Running", "--label", "io.kubernetes.pod.uid="+string(p.UID), "--name", "^"+ctr+"$")
	if err != nil {
		t.Fatal(err)
	}
	id := strings.Fields(string(ids))
	if len(id) != 1 {
		t.Fatalf("pod %s: %d running containers %s on the node, want 1", p.Name, len(id), ctr)
	}
	out, err := kb.Exec(ctx, p.Spec.NodeName, "crictl", "inspect", "-o", "go-template", "--template", "{{.info.pid}}", id[0])
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("pod %s: pid %q: %v", p.Name, out, err)
	}
	return pid
}

// procStatus is /proc/<pid>/status of pod p's first container, read on the node.
func procStatus(ctx context.Context, t *testing.T, p *corev1.Pod) map[string]string {
	t.Helper()
	out, err := kb.Exec(ctx, p.Spec.NodeName, "cat", fmt.Sprintf("/proc/%d/status", containerPID(ctx, t, p)))
	if err != nil {
		t.Fatal(err)
	}
	st := map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			st[k] = strings.TrimSpace(v)
		}
	}
	return st
}

// rootMount is the mount options of / as pod p's first container sees it.
func rootMount(ctx context.Context, t *testing.T, p *corev1.Pod) string {
	t.Helper()
	out, err := kb.Exec(ctx, p.Spec.NodeName, "cat", fmt.Sprintf("/proc/%d/mountinfo", containerPID(ctx, t, p)))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) > 5 && f[4] == "/" {
			return f[5]
		}
	}
	t.Fatalf("pod %s: no / in its mountinfo", p.Name)
	return ""
}
