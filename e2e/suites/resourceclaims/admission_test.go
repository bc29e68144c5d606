package resourceclaims_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
)

// path is the templates annotation of the JobSet's second ReplicatedJob.
const path = "spec.replicatedJobs[1].template.metadata.annotations[resourceclaims.jobset-addons.io/templates]"

// dropsDeviceTolerations says whether the testbed's API server drops a device request's
// tolerations rather than validating them: Kubernetes 1.35, where their feature gate
// (DRADeviceTaints) is alpha and off. 1.34, and 1.36 and later, refuse a bad one.
func dropsDeviceTolerations(t *testing.T) bool {
	return framework.KubeAtLeast(t, "1.35.0") && !framework.KubeAtLeast(t, "1.36.0")
}

// TestAdmission: bad templates are refused at admission, each with its field path, all in one
// response; the templates are immutable. A bad field that the API server drops instead (a
// device toleration on Kubernetes 1.35) admits the JobSet with a Warning that names it.
func TestAdmission(t *testing.T) {
	ownClaim := func(js *jobsetv1alpha2.JobSet) {
		spec := &js.Spec.ReplicatedJobs[1].Template.Spec.Template.Spec
		spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("users-gpu")}}
		spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
	}
	for _, tc := range []struct {
		name      string
		templates string
		edit      func(*jobsetv1alpha2.JobSet)
		want      []string
		// dropped, where the API server drops tolerations (dropsDeviceTolerations), is the
		// field of the first template's claim that it drops: the JobSet is admitted with a
		// Warning naming it.
		dropped string
	}{
		{name: "not YAML", templates: `[{`, want: []string{path + ": Invalid value"}},
		{name: "empty list", templates: `[]`, want: []string{path + ": Required value"}},
		{name: "unknown field", templates: `[{metadata: {name: a}, ` + sharedData + `, container: [worker]}]`, want: []string{path + "[0].container: Unsupported value"}},
		{name: "unknown container", templates: `[{metadata: {name: a}, ` + sharedData + `, containers: [worker, trainer]}]`, want: []string{path + `[0].containers[1]: Invalid value: "trainer"`}},
		{name: "template name twice", templates: `[{metadata: {name: a}, ` + sharedData + `}, {metadata: {name: a}, ` + sharedData + `}]`, want: []string{path + `[1].metadata.name: Duplicate value: "a"`}},
		{name: "name not a DNS label", templates: `[{metadata: {name: Data_1}, ` + sharedData + `}]`, want: []string{path + `[0].metadata.name: Invalid value: "Data_1"`}},
		{name: "namespace set", templates: `[{metadata: {name: a, namespace: other}, ` + sharedData + `}]`, want: []string{path + "[0].metadata.namespace: Forbidden"}},
		{name: "bad retention", templates: `[{metadata: {name: a}, ` + sharedData + `, whenJobFinished: Keep}]`, want: []string{path + `[0].whenJobFinished: Unsupported value: "Keep"`}},
		{name: "clash with the pod's claim in the same container", templates: `[{metadata: {name: gpu}, ` + sharedData + `, containers: [worker]}]`, edit: ownClaim,
			want: []string{path + `[0].metadata.name: Invalid value: "gpu": clashes with the pod template's own claim spec.resourceClaims[0]`}},
		{name: "spec without a device class (API server's validation)", templates: `[{metadata: {name: a}, spec: {devices: {requests: [{name: r, exactly: {}}]}}}]`,
			want: []string{path + "[0].spec.devices.requests[0].exactly.deviceClassName: Required value"}},
		{name: "spec with a bad request name (API server's validation)", templates: `[{metadata: {name: a}, spec: {devices: {requests: [{name: R_1, exactly: {deviceClassName: c}}]}}}]`,
			want: []string{path + "[0].spec.devices.requests[0].name: Invalid value"}},
		{name: "api: no request type", templates: `[{metadata: {name: a}, spec: {devices: {requests: [{name: r}]}}}]`, want: []string{path + "[0].spec.devices.requests[0]: Required value"}},
		{name: "api: exactly and firstAvailable", templates: `[{metadata: {name: a}, spec: {devices: {requests: [{name: r, exactly: {deviceClassName: c}, firstAvailable: [{name: s, deviceClassName: c}]}]}}}]`, want: []string{path + "[0].spec.devices.requests[0]: Invalid value"}},
		{name: "api: request names twice", templates: `[{metadata: {name: a}, spec: {devices: {requests: [{name: r, exactly: {deviceClassName: c}}, {name: r, exactly: {deviceClassName: c}}]}}}]`, want: []string{path + "[0].spec.devices.requests[1]"}},
		{name: "api: device class name", templates: `[{metadata: {name: a}, spec: {devices: {requests: [{name: r, exactly: {deviceClassName: Bad_Class}}]}}}]`, want: []string{path + "[0].spec.devices.requests[0].exactly.deviceClassName: Invalid value"}},
		{name: "api: selector without cel", templates: `[{metadata: {name: a}, spec: {devices: {requests: [{name: r, exactly: {deviceClassName: c, selectors: [{}]}}]}}}]`, want: []string{path + "[0].spec.devices.requests[0].exactly.selectors[0].cel: Required value"}},
		{name: "api: selector that does not compile", templates: `[{metadata: {name: a}, spec: {devices: {requests: [{name: r, exactly: {deviceClassName: c, selectors: [{cel: {expression: 'device.attributes["x"].y ==='}}]}}]}}}]`, want: []string{path + "[0].spec.devices.requests[0].exactly.selectors[0].cel.expression: Invalid value"}},
		{name: "api: selector not a boolean", templates: `[{metadata: {name: a}, spec: {devices: {requests: [{name: r, exactly: {deviceClassName: c, selectors: [{cel: {expression: '1 + 1'}}]}}]}}}]`, want: []string{path + "[0].spec.devices.requests[0].exactly.selectors[0].cel.expression: Invalid value"}},
		{name: "api: allocation mode", templates: `[{metadata: {name: a}, spec: {devices: {requests: [{name: r, exactly: {deviceClassName: c, allocationMode: Some}}]}}}]`, want: []string{path + "[0].spec.devices.requests[0].exactly.allocationMode: Unsupported value"}},
		{name: "api: negative count", templates: `[{metadata: {name: a}, spec: {devices: {requests: [{name: r, exactly: {deviceClassName: c, count: -1}}]}}}]`, want: []string{path + "[0].spec.devices.requests[0].exactly.count: Invalid value"}},
		{name: "api: count with allocation mode All", templates: `[{metadata: {name: a}, spec: {devices: {requests: [{name: r, exactly: {deviceClassName: c, allocationMode: All, count: 2}}]}}}]`, want: []string{path + "[0].spec.devices.requests[0].exactly.count: Invalid value"}},
		{name: "api: toleration operator", templates: `[{metadata: {name: a}, spec: {devices: {requests: [{name: r, exactly: {deviceClassName: c, tolerations: [{key: k, operator: Near, value: v}]}}]}}}]`, want: []string{path + "[0].spec.devices.requests[0].exactly.tolerations[0].operator"},
			dropped: "spec.devices.requests[0].exactly.tolerations"},
		{name: "api: toleration effect", templates: `[{metadata: {name: a}, spec: {devices: {requests: [{name: r, exactly: {deviceClassName: c, tolerations: [{key: k, operator: Exists, effect: Sometimes}]}}]}}}]`, want: []string{path + "[0].spec.devices.requests[0].exactly.tolerations[0].effect"},
			dropped: "spec.devices.requests[0].exactly.tolerations"},
		{name: "api: subrequest without device class", templates: `[{metadata: {name: a}, spec: {devices: {requests: [{name: r, firstAvailable: [{name: s}]}]}}}]`, want: []string{path + "[0].spec.devices.requests[0].firstAvailable[0].deviceClassName: Required value"}},
		{name: "api: subrequest name", templates: `[{metadata: {name: a}, spec: {devices: {requests: [{name: r, firstAvailable: [{name: S_1, deviceClassName: c}]}]}}}]`, want: []string{path + "[0].spec.devices.requests[0].firstAvailable[0].name: Invalid value"}},
		{name: "api: constraint of an unknown request", templates: `[{metadata: {name: a}, spec: {devices: {requests: [{name: r, exactly: {deviceClassName: c}}], constraints: [{requests: [nope], matchAttribute: example.com/numa}]}}}]`, want: []string{path + "[0].spec.devices.constraints[0].requests[0]: Invalid value"}},
		{name: "api: constraint without an attribute", templates: `[{metadata: {name: a}, spec: {devices: {requests: [{name: r, exactly: {deviceClassName: c}}], constraints: [{requests: [r]}]}}}]`, want: []string{path + "[0].spec.devices.constraints[0]"}},
		{name: "api: constraint attribute not fully qualified", templates: `[{metadata: {name: a}, spec: {devices: {requests: [{name: r, exactly: {deviceClassName: c}}], constraints: [{matchAttribute: numa}]}}}]`, want: []string{path + "[0].spec.devices.constraints[0].matchAttribute: Invalid value"}},
		{name: "api: config without opaque", templates: `[{metadata: {name: a}, spec: {devices: {requests: [{name: r, exactly: {deviceClassName: c}}], config: [{requests: [r]}]}}}]`, want: []string{path + "[0].spec.devices.config[0].opaque: Required value"}},
		{name: "api: config driver name", templates: `[{metadata: {name: a}, spec: {devices: {requests: [{name: r, exactly: {deviceClassName: c}}], config: [{opaque: {driver: Not_A_Driver, parameters: {a: 1}}}]}}}]`, want: []string{path + "[0].spec.devices.config[0].opaque.driver: Invalid value"}},
		{name: "api: config parameters not an object", templates: `[{metadata: {name: a}, spec: {devices: {requests: [{name: r, exactly: {deviceClassName: c}}], config: [{opaque: {driver: gpu.example.com, parameters: [1, 2]}}]}}}]`, want: []string{path + "[0].spec.devices.config[0].opaque.parameters"}},
		{name: "api: config of an unknown request", templates: `[{metadata: {name: a}, spec: {devices: {requests: [{name: r, exactly: {deviceClassName: c}}], config: [{requests: [nope], opaque: {driver: gpu.example.com, parameters: {a: 1}}}]}}}]`, want: []string{path + "[0].spec.devices.config[0].requests[0]: Invalid value"}},
		{name: "api: admin access without the namespace label", templates: `[{metadata: {name: a}, spec: {devices: {requests: [{name: r, exactly: {deviceClassName: c, adminAccess: true}}]}}}]`, want: []string{path + "[0].spec.devices.requests[0].adminAccess: Forbidden"}},
		{name: "api: more than 32 requests", templates: `[{metadata: {name: a}, spec: {devices: {requests: [{name: r0, exactly: {deviceClassName: c}}, {name: r1, exactly: {deviceClassName: c}}, {name: r2, exactly: {deviceClassName: c}}, {name: r3, exactly: {deviceClassName: c}}, {name: r4, exactly: {deviceClassName: c}}, {name: r5, exactly: {deviceClassName: c}}, {name: r6, exactly: {deviceClassName: c}}, {name: r7, exactly: {deviceClassName: c}}, {name: r8, exactly: {deviceClassName: c}}, {name: r9, exactly: {deviceClassName: c}}, {name: r10, exactly: {deviceClassName: c}}, {name: r11, exactly: {deviceClassName: c}}, {name: r12, exactly: {deviceClassName: c}}, {name: r13, exactly: {deviceClassName: c}}, {name: r14, exactly: {deviceClassName: c}}, {name: r15, exactly: {deviceClassName: c}}, {name: r16, exactly: {deviceClassName: c}}, {name: r17, exactly: {deviceClassName: c}}, {name: r18, exactly: {deviceClassName: c}}, {name: r19, exactly: {deviceClassName: c}}, {name: r20, exactly: {deviceClassName: c}}, {name: r21, exactly: {deviceClassName: c}}, {name: r22, exactly: {deviceClassName: c}}, {name: r23, exactly: {deviceClassName: c}}, {name: r24, exactly: {deviceClassName: c}}, {name: r25, exactly: {deviceClassName: c}}, {name: r26, exactly: {deviceClassName: c}}, {name: r27, exactly: {deviceClassName: c}}, {name: r28, exactly: {deviceClassName: c}}, {name: r29, exactly: {deviceClassName: c}}, {name: r30, exactly: {deviceClassName: c}}, {name: r31, exactly: {deviceClassName: c}}, {name: r32, exactly: {deviceClassName: c}}]}}}]`, want: []string{path + "[0].spec.devices.requests: Too many"}},
		{name: "a Job of 300 pods sharing claims that no PodGroup holds", templates: `[{metadata: {name: a}, ` + sharedData + `}]`, edit: func(js *jobsetv1alpha2.JobSet) {
			spec := &js.Spec.ReplicatedJobs[1].Template.Spec
			spec.Parallelism, spec.Completions = ptr.To[int32](300), ptr.To[int32](300)
		}, want: []string{path + `: Forbidden: a Job of ReplicatedJob "w" runs 300 pods at once and shares these claims`}},
		{name: "every error in one response", templates: `[{metadata: {name: a}, ` + sharedData + `, containers: [nope], whenJobFinished: Never}, {metadata: {name: a, namespace: x}, ` + sharedData + `}]`,
			want: []string{path + "[0].containers[0]: Invalid value", path + "[0].whenJobFinished: Unsupported value", path + "[1].metadata.name: Duplicate value", path + "[1].metadata.namespace: Forbidden"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.dropped != "" && dropsDeviceTolerations(t) {
				testenv.Test(t, droppedWarned(tc.name, tc.templates, tc.dropped))
				return
			}
			f := framework.NamespacedFeature(tc.name, "refused with the field path", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
				c := framework.Client(t, cfg)
				js := newJobSet(framework.NamespaceFrom(ctx), "bad", rjob("plain", 1, 1, ""), rjob("w", 2, 1, tc.templates))
				if tc.edit != nil {
					tc.edit(js)
				}
				err := c.Create(ctx, js)
				if err == nil {
					t.Fatal("admitted")
				}
				framework.ExpectCauses(t, js, err)
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q\ndoes not contain %q", err, w)
					}
				}
				if !strings.Contains(err.Error(), "vjobset.resourceclaims.jobset-addons.io") {
					t.Errorf("error %q is not from the resourceclaims webhook", err)
				}
				return ctx
			})
			testenv.Test(t, f)
		})
	}
}

// droppedWarned is the feature of a JobSet whose first template has a field, dropped (its path
// in the claim), that the API server drops rather than validates: the JobSet is admitted, with
// resourceclaims' one Warning that names the field in the claim and in the annotation.
func droppedWarned(name, templates, dropped string) features.Feature {
	return framework.NamespacedFeature(name, "admitted with a Warning naming the dropped field", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		js := newJobSet(framework.NamespaceFrom(ctx), "bad", rjob("plain", 1, 1, ""), rjob("w", 2, 1, templates))
		js.Spec.Suspend = ptr.To(true)
		warnings := framework.CreateWithWarnings(ctx, t, cfg, js)
		want := "resourceclaims: the API server dropped " + dropped + " of the ResourceClaim bad-w-0-a (" + path + "[0]." + dropped + "): "
		framework.ExpectDryRunWarning(t, warnings, "resourceclaims: the API server dropped ", want)
		return ctx
	})
}

// TestTemplatesImmutable: an admitted JobSet's templates may not change.
func TestTemplatesImmutable(t *testing.T) {
	f := framework.NamespacedFeature("the templates are immutable", "update refused", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		js := newJobSet(framework.NamespaceFrom(ctx), "immutable", rjob("plain", 1, 1, ""), rjob("w", 1, 1, `[{metadata: {name: a}, `+sharedData+`}]`))
		js.Spec.Suspend = ptr.To(true)
		framework.CreateAll(ctx, t, c, js)
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(js), js); err != nil {
				return err
			}
			js.Spec.ReplicatedJobs[1].Template.Annotations["resourceclaims.jobset-addons.io/templates"] = `[{metadata: {name: b}, ` + sharedData + `}]`
			return c.Update(ctx, js)
		})
		// Upstream JobSet refuses a change of spec.replicatedJobs too, and the apiserver
		// answers with one of the refusals: the resourceclaims one is checked by unit tests.
		if err == nil || !strings.Contains(err.Error(), "immutable") {
			t.Errorf("update: %v", err)
		}
		return ctx
	})
	testenv.Test(t, f)
}

// TestShadowedAndScope: a pod template's own claim of a template's name wins: the JobSet is
// admitted, its pods use their own claim, no claim is made for the template, and a Warning
// event says so. A JobSet without templates never reaches the webhooks.
func TestShadowedAndScope(t *testing.T) {
	f := framework.NamespacedFeature("the pod template's own claim wins; plain JobSets never reach the webhooks", "shadowed, warned; no webhook call", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		users := &resourcev1.ResourceClaimTemplate{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "users-gpu"},
			Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
				Name: "d", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "shared-data-resource"},
			}}}}},
		}
		rj := rjob("w", 1, 1, `[{metadata: {name: gpu}, `+sharedData+`, containers: [helper]}, {metadata: {name: data}, `+sharedData+`}]`)
		spec := &rj.Template.Spec.Template.Spec
		spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("users-gpu")}}
		spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
		js := newJobSet(ns, "shadowed", rj)
		framework.CreateAll(ctx, t, c, users, js)
		framework.WaitJobSet(ctx, t, c, js, jobsetv1alpha2.JobSetCompleted)
		waitEvent(ctx, t, c, ns, js.Name, "ResourceClaimShadowed", "gpu")
		pods := podsOf(ctx, t, c, ns, js.Name)
		if len(pods) != 1 {
			t.Fatalf("%d pods", len(pods))
		}
		claims, containers := podClaims(&pods[0])
		if claims["gpu"] != "template:users-gpu" || claims["data"] != "shadowed-w-0-data" {
			t.Errorf("pod claims %v: want the user's gpu and our data", claims)
		}
		if containers["worker"] != "data,gpu" || containers["helper"] != "data" {
			t.Errorf("containers reference %v", containers)
		}
		var ours resourcev1.ResourceClaim
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shadowed-w-0-gpu"}, &ours); err == nil {
			t.Errorf("a claim was made for the shadowed template")
		}

		before := framework.WebhookCalls(ctx, t, cfg, "resourceclaims")
		plain := newJobSet(ns, "plain", rjob("w", 2, 2, ""))
		framework.CreateAll(ctx, t, c, plain)
		framework.WaitJobSet(ctx, t, c, plain, jobsetv1alpha2.JobSetCompleted)
		if after := framework.WebhookCalls(ctx, t, cfg, "resourceclaims"); !equal(before, after) {
			t.Errorf("webhook calls went from %v to %v", before, after)
		}
		metrics := framework.AddonMetrics(ctx, t, "resourceclaims")
		for _, want := range []string{"jobset_addons_resourceclaims_created_total", `jobset_addons_resourceclaims_deleted_total{cause="finished"}`, `jobset_addons_resourceclaims_skipped_total{reason="shadowed"}`} {
			if !strings.Contains(metrics, want) {
				t.Errorf("/metrics has no %s", want)
			}
		}
		return ctx
	})
	testenv.Test(t, f)
}

func equal(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
