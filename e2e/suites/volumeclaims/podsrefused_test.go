package volumeclaims_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
)

// TestPodsRefused: a namespace whose policy refuses pods that mount PersistentVolumeClaims,
// naming them (a platform's rule; the API server applies it to each pod the Job controller
// creates, after volumeclaims added the per-pod volume). The JobSet is admitted and its PVCs
// made; its Jobs cannot create their pods, and within 30 s volumeclaims says so on the JobSet,
// once, naming the Job, the per-pod PVC and the policy's message; kubectl jobset-addons status
// shows it.
func TestPodsRefused(t *testing.T) {
	f := framework.NamespacedFeature("pods refused for their PVC", "PodsRefused on the JobSet within 30 s", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		framework.RefusePods(ctx, t, c, ns, "!has(object.spec.volumes) || object.spec.volumes.all(v, !has(v.persistentVolumeClaim))",
			"'no PersistentVolumeClaims in this namespace: ' + object.spec.volumes.filter(v, has(v.persistentVolumeClaim)).map(v, v.persistentVolumeClaim.claimName).join(', ')",
			func(spec *corev1.PodSpec) {
				spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "probe"}}}}
			})
		js := newJobSet(ns, "refused", `[{targetReplicatedJobs: [w], templates: [{metadata: {name: ckpt}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}]}]`,
			replicatedJob("w", 1, 1, "ckpt"))
		framework.CreateAll(ctx, t, c, js)
		framework.ExpectPodsRefused(ctx, t, cfg, c, js, "Job refused-w-0", "per-pod PersistentVolumeClaim ckpt-refused-w-0-0 (template ckpt)",
			"no PersistentVolumeClaims in this namespace: ckpt-refused-w-0-0")
		return ctx
	})
	testenv.Test(t, f)
}
