package framework

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// EnforcePodSecurity sets Pod Security's enforce level (privileged, baseline, restricted) on
// the namespace ns.
func EnforcePodSecurity(ctx context.Context, t *testing.T, c client.Client, ns, level string) {
	t.Helper()
	obj := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: ns}, obj); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(obj.DeepCopy())
	if obj.Labels == nil {
		obj.Labels = map[string]string{}
	}
	obj.Labels["pod-security.kubernetes.io/enforce"] = level
	if err := c.Patch(ctx, obj, patch); err != nil {
		t.Fatal(err)
	}
}

// RestrictedPodSpec makes spec and every container of it comply with Pod Security restricted:
// a non-root user (1000), the runtime's default seccomp profile, no privilege escalation, no
// capabilities.
func RestrictedPodSpec(spec *corev1.PodSpec) {
	spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
	for i := range spec.Containers {
		spec.Containers[i].SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
	}
}
