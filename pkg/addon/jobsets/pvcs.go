package jobsets

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// PVCHolders maps each PVC name to the pods that keep it from going away (the rule of
// kube-controller-manager's pvc-protection: a pod that names the PVC in a volume and was scheduled, finished or not).
func PVCHolders(pods []corev1.Pod, pvcs sets.Set[string]) map[string][]*corev1.Pod {
	out := map[string][]*corev1.Pod{}
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == "" {
			continue
		}
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && pvcs.Has(v.PersistentVolumeClaim.ClaimName) {
				out[v.PersistentVolumeClaim.ClaimName] = append(out[v.PersistentVolumeClaim.ClaimName], p)
			}
		}
	}
	return out
}

// PodFinished tells whether the pod ran to its end (Succeeded or Failed).
func PodFinished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}
