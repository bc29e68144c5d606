package main

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	pvcutil "k8s.io/kubernetes/pkg/api/persistentvolumeclaim"
	podutil "k8s.io/kubernetes/pkg/api/pod"
	core "k8s.io/kubernetes/pkg/apis/core"
	_ "k8s.io/kubernetes/pkg/apis/core/install" // v1 defaults and conversions
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
	"k8s.io/kubernetes/pkg/apis/resource"
	_ "k8s.io/kubernetes/pkg/apis/resource/install" // resource.k8s.io/v1 defaults and conversions
	resourcevalidation "k8s.io/kubernetes/pkg/apis/resource/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// apiServerValidation judges an object an add-on would make as the API server of this
// project's Kubernetes version does on create, offline, with its own code: the object's
// defaults set, converted to the API server's internal version, prepared as the registry's
// PrepareForCreate prepares the PVC's and the pod's spec (a PVC's dataSource copied to its
// dataSourceRef), and validated by the validation its registry runs (the
// PersistentVolumeClaim, ResourceClaim and Pod strategies' Validate), with the default feature
// gates. What the API server checks beyond that (quota,
// LimitRange, Pod Security, admission webhooks and policies, whether the namespace can be
// written) needs the cluster. An object of another kind is not judged. A manifest without a
// namespace is applied to one the API server fills in: its objects are judged in "default".
func apiServerValidation(obj client.Object) field.ErrorList {
	if obj.GetNamespace() == "" {
		obj = obj.DeepCopyObject().(client.Object)
		obj.SetNamespace(metav1.NamespaceDefault)
	}
	switch o := obj.(type) {
	case *corev1.PersistentVolumeClaim:
		pvc := &core.PersistentVolumeClaim{}
		if err := internal(o, pvc); err != nil {
			return err
		}
		// What the PVC strategy's PrepareForCreate does to the spec before validation.
		pvcutil.DropDisabledFields(&pvc.Spec, nil)
		pvcutil.EnforceDataSourceBackwardsCompatibility(&pvc.Spec, nil)
		pvcutil.NormalizeDataSources(&pvc.Spec)
		return corevalidation.ValidatePersistentVolumeClaim(pvc, corevalidation.ValidationOptionsForPersistentVolumeClaim(pvc, nil))
	case *resourcev1.ResourceClaim:
		claim := &resource.ResourceClaim{}
		if err := internal(o, claim); err != nil {
			return err
		}
		return resourcevalidation.ValidateResourceClaim(claim)
	case *corev1.Pod:
		pod := &core.Pod{}
		if err := internal(o, pod); err != nil {
			return err
		}
		if pod.Name == "" {
			pod.Name = pod.GenerateName + "x" // the API server names it before it validates it
		}
		// What the pod strategy's PrepareForCreate does that validation reads.
		podutil.DropDisabledPodFields(pod, nil)
		podutil.DefaultPodLevelResources(pod)
		opts := podutil.GetValidationOptionsFromPodSpecAndMeta(&pod.Spec, nil, &pod.ObjectMeta, nil)
		opts.ResourceIsPod = true
		return corevalidation.ValidatePodCreate(pod, opts)
	}
	return nil
}

// internal sets the defaults of in (a copy) and converts it to out, of the internal version.
func internal(in runtime.Object, out runtime.Object) field.ErrorList {
	v := in.DeepCopyObject()
	legacyscheme.Scheme.Default(v)
	if err := legacyscheme.Scheme.Convert(v, out, nil); err != nil {
		return field.ErrorList{field.InternalError(nil, fmt.Errorf("converting to the API server's internal version: %w", err))}
	}
	return nil
}
