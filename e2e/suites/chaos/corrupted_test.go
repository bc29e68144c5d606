package chaos_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestCorruptedAfterAdmission: for each add-on, a running JobSet whose annotation is corrupted
// after admission, straight in etcd so that no webhook sees it. The add-on must say so with a
// Warning Event and destroy nothing: its objects stay, and no gated stage is released.
func TestCorruptedAfterAdmission(t *testing.T) {
	type corruption struct {
		addon, reason string
		shape         int
		// corrupt edits the stored JobSet.
		corrupt func(obj map[string]any)
		// intact lists what must still stand (it fails the test otherwise).
		intact func(ctx context.Context, c client.Client, js *jobsetv1alpha2.JobSet) error
	}
	annotations := func(obj map[string]any) map[string]any {
		return obj["metadata"].(map[string]any)["annotations"].(map[string]any)
	}
	exist := func(objs ...client.Object) func(context.Context, client.Client, *jobsetv1alpha2.JobSet) error {
		return func(ctx context.Context, c client.Client, js *jobsetv1alpha2.JobSet) error {
			for _, o := range objs {
				o.SetNamespace(js.Namespace)
				if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
					return err
				}
				if o.GetDeletionTimestamp() != nil {
					return fmt.Errorf("%T %s is being deleted", o, o.GetName())
				}
			}
			return nil
		}
	}
	named := func(o client.Object, name string) client.Object { o.SetName(name); return o }
	for _, k := range []corruption{{
		addon: "volumeclaims", reason: "InvalidPolicies", shape: 0,
		corrupt: func(obj map[string]any) { annotations(obj)[contract.PoliciesAnnotationKey] = "- templates: [{{{" },
		intact:  exist(named(&corev1.PersistentVolumeClaim{}, "data-cv-vc"), named(&corev1.PersistentVolumeClaim{}, "ckpt-cv-vc-worker-1-1")),
	}, {
		addon: "resourceclaims", reason: "InvalidResourceClaimTemplates", shape: 0,
		corrupt: func(obj map[string]any) {
			rj := obj["spec"].(map[string]any)["replicatedJobs"].([]any)[0].(map[string]any)
			annotations(rj["template"].(map[string]any))[contract.TemplatesAnnotationKey] = "[{metadata: {name: dev}, spec: 7}]"
		},
		intact: exist(named(&resourcev1.ResourceClaim{}, "cv-rc-worker-0-dev"), named(&resourcev1.ResourceClaim{}, "cv-rc-worker-1-dev")),
	}, {
		addon: "sequencer", reason: "InvalidSequence", shape: 1,
		corrupt: func(obj map[string]any) { annotations(obj)[contract.ExecutionPolicyAnnotationKey] = "Sideways" },
		intact: func(ctx context.Context, c client.Client, js *jobsetv1alpha2.JobSet) error {
			var pods corev1.PodList
			if err := c.List(ctx, &pods, client.InNamespace(js.Namespace), client.MatchingLabels{
				contract.JobSetNameLabelKey: js.Name, contract.ReplicatedJobNameLabelKey: "train"}); err != nil {
				return err
			}
			if len(pods.Items) == 0 {
				return fmt.Errorf("no pods of train yet")
			}
			for _, p := range pods.Items {
				if len(p.Spec.SchedulingGates) == 0 {
					return fmt.Errorf("pod %s of the second stage was released while the first runs", p.Name)
				}
			}
			return nil
		},
	}, {
		addon: "podgroups", reason: "InvalidPodGroupSettings", shape: 1,
		corrupt: func(obj map[string]any) { annotations(obj)[contract.SchedulerAnnotationKey] = "kube-batch" },
		intact:  exist(named(&volcanov1beta1.PodGroup{}, "cv-pg-stage-0")),
	}} {
		f := features.New(k.addon).Assess("a Warning, and nothing destroyed", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if err := waitProbe(ctx, cfg); err != nil {
				t.Fatal(err)
			}
			c := framework.Client(t, cfg)
			ns := newNamespace(ctx, t, c, "corrupt-"+k.addon[:4])
			js := mixJobSet(ns, k.shape)
			js.Name = "cv-" + map[string]string{"volumeclaims": "vc", "resourceclaims": "rc", "sequencer": "sq", "podgroups": "pg"}[k.addon]
			for i := range js.Spec.ReplicatedJobs { // long enough to corrupt it while it runs
				js.Spec.ReplicatedJobs[i].Template.Spec.Template.Annotations[framework.DelayAnnotationKey] = "5m"
			}
			framework.CreateAll(ctx, t, c, js)
			framework.Eventually(ctx, t, time.Minute, "the add-on's objects", func(ctx context.Context) (bool, string, error) {
				err := k.intact(ctx, c, js)
				return err == nil, fmt.Sprint(err), nil
			})
			if err := framework.EditInEtcd(ctx, tb, "jobset.x-k8s.io/jobsets/"+ns+"/"+js.Name, func(obj map[string]any) error {
				k.corrupt(obj)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			framework.Eventually(ctx, t, time.Minute, "a Warning "+k.reason, func(ctx context.Context) (bool, string, error) {
				reasons, err := framework.EventReasons(ctx, c, js)
				return reasons[k.reason] > 0, fmt.Sprintf("reasons %v (%v)", reasons, err), nil
			})
			// Give a destructive reconcile the time to happen, then look.
			time.Sleep(3 * time.Second)
			if err := k.intact(ctx, c, js); err != nil {
				t.Errorf("after the corruption: %v", err)
			}
			t.Logf("%s: corrupted in etcd, Warning %s, objects intact", k.addon, k.reason)
			return ctx
		}).Feature()
		testenv.Test(t, f)
	}
}
