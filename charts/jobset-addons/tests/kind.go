package main

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// checkKindFile checks the render of hack/kind/values.yaml, what make e2e-kind installs: all
// four controllers; each image is kind.local/<name> and never pulled (ko loads it into the kind
// nodes); every webhook of every configuration reaches, through its Service, the webhook port
// of that controller's pods; every controller mounts its own certificate Secret, which the
// render holds empty for cert-controller to fill.
func checkKindFile(file string) ([]string, error) {
	want, docs, err := readRender(file)
	if err != nil {
		return nil, err
	}
	c := &checker{}
	if want.mode != "self-signed" || len(want.enabled) != len(controllers) {
		c.errorf("%s: the kind render must be self-signed with every controller on", file)
	}
	c.checkRender(want, docs)
	deps := map[string]*appsv1.Deployment{}
	svcs := map[string]*corev1.Service{}
	for _, d := range docs {
		switch d.kind {
		case "Deployment":
			var dep appsv1.Deployment
			if c.decode(d, &dep) {
				deps[d.labels["app.kubernetes.io/component"]] = &dep
			}
		case "Service":
			var svc corev1.Service
			if c.decode(d, &svc) {
				svcs[d.name] = &svc
			}
		}
	}
	for _, name := range controllers {
		dep := deps[name]
		if dep == nil {
			c.errorf("no Deployment of %s", name)
			continue
		}
		ctr := dep.Spec.Template.Spec.Containers[0]
		if !strings.HasPrefix(ctr.Image, "kind.local/"+name+":") || ctr.ImagePullPolicy != corev1.PullNever {
			c.errorf("%s: image %s pulled %s, want kind.local/%s:TAG never pulled", name, ctr.Image, ctr.ImagePullPolicy, name)
		}
	}
	for _, d := range docs {
		var services []admissionregistrationv1.ServiceReference
		switch d.kind {
		case "MutatingWebhookConfiguration":
			var m admissionregistrationv1.MutatingWebhookConfiguration
			if c.decode(d, &m) {
				for _, w := range m.Webhooks {
					services = append(services, serviceOf(w.ClientConfig))
				}
			}
		case "ValidatingWebhookConfiguration":
			var v admissionregistrationv1.ValidatingWebhookConfiguration
			if c.decode(d, &v) {
				for _, w := range v.Webhooks {
					services = append(services, serviceOf(w.ClientConfig))
				}
			}
		default:
			continue
		}
		name := d.labels["app.kubernetes.io/component"]
		for _, ref := range services {
			if err := reaches(ref, svcs, deps[name]); err != nil {
				c.errorf("%s: %v", d, err)
			}
		}
	}
	return c.problems, nil
}

func serviceOf(cc admissionregistrationv1.WebhookClientConfig) admissionregistrationv1.ServiceReference {
	if cc.Service == nil {
		return admissionregistrationv1.ServiceReference{}
	}
	return *cc.Service
}

// reaches says why a call to the Service ref would not reach dep's webhook server, if it would not.
func reaches(ref admissionregistrationv1.ServiceReference, svcs map[string]*corev1.Service, dep *appsv1.Deployment) error {
	svc := svcs[ref.Name]
	switch {
	case ref.Name == "" || ref.Path == nil || *ref.Path == "":
		return fmt.Errorf("a webhook does not call a Service path")
	case svc == nil || ref.Namespace != namespace:
		return fmt.Errorf("Service %s/%s is not in the render", ref.Namespace, ref.Name)
	case dep == nil:
		return fmt.Errorf("Service %s: no Deployment of the same controller", ref.Name)
	}
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(dep.Spec.Template.Labels)) || len(svc.Spec.Selector) == 0 {
		return fmt.Errorf("Service %s selects %v, not %s's pods", ref.Name, svc.Spec.Selector, dep.Name)
	}
	port := int32(443)
	if ref.Port != nil {
		port = *ref.Port
	}
	for _, sp := range svc.Spec.Ports {
		if sp.Port != port {
			continue
		}
		for _, cp := range dep.Spec.Template.Spec.Containers[0].Ports {
			if (sp.TargetPort.Type == intstr.String && sp.TargetPort.StrVal == cp.Name) ||
				(sp.TargetPort.Type == intstr.Int && sp.TargetPort.IntVal == cp.ContainerPort) {
				if cp.Name != "webhook" {
					return fmt.Errorf("Service %s:%d reaches container port %s, not webhook", ref.Name, port, cp.Name)
				}
				return nil
			}
		}
		return fmt.Errorf("Service %s:%d targets %s, no port of %s's container", ref.Name, port, sp.TargetPort.String(), dep.Name)
	}
	return fmt.Errorf("Service %s has no port %d", ref.Name, port)
}
