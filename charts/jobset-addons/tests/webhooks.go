package main

import (
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// fixtureWebhooks is what testdata/_webhooks.tpl declares: controller -> kind -> webhook names.
var fixtureWebhooks = map[string]map[string][]string{
	"volumeclaims": {
		"MutatingWebhookConfiguration":   {"mjobset.volumeclaims.jobset-addons.io", "mpod.volumeclaims.jobset-addons.io"},
		"ValidatingWebhookConfiguration": {"vjobset.volumeclaims.jobset-addons.io"},
	},
	"sequencer": {
		"ValidatingWebhookConfiguration": {"vjobset.sequencer.jobset-addons.io"},
	},
}

// fixtureSideEffects are the webhooks of the fixture that declare sideEffects; the others get
// None.
var fixtureSideEffects = map[string]admissionregistrationv1.SideEffectClass{
	"mpod.volumeclaims.jobset-addons.io": admissionregistrationv1.SideEffectClassNoneOnDryRun,
}

// checkWebhooksFile checks a render of the chart whose templates/_webhooks.tpl is the fixture:
// exactly the enabled controllers that declare webhooks of a kind get a configuration of that
// kind, named after the controller, whose webhooks call the controller's Service, fail closed,
// have no side effects unless they declare some (then the ones declared), and carry cert-manager's CA annotation in cert-manager mode only.
func checkWebhooksFile(file string) ([]string, error) {
	want, docs, err := readRender(file)
	if err != nil {
		return nil, err
	}
	c := &checker{}
	for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		var exp []string
		for _, n := range want.enabled {
			if len(fixtureWebhooks[n][kind]) > 0 {
				exp = append(exp, fullname(n))
			}
		}
		slices.Sort(exp)
		if got := namesOf(docs, kind); !slices.Equal(got, exp) {
			c.errorf("%s objects: got %v, want %v", kind, got, exp)
		}
	}
	for _, d := range docs {
		var (
			names   []string
			clients []admissionregistrationv1.WebhookClientConfig
			fails   []*admissionregistrationv1.FailurePolicyType
			effects []*admissionregistrationv1.SideEffectClass
			annots  map[string]string
		)
		switch d.kind {
		case "MutatingWebhookConfiguration":
			var cfg admissionregistrationv1.MutatingWebhookConfiguration
			if !c.decode(d, &cfg) {
				continue
			}
			annots = cfg.Annotations
			for _, w := range cfg.Webhooks {
				names, clients = append(names, w.Name), append(clients, w.ClientConfig)
				fails, effects = append(fails, w.FailurePolicy), append(effects, w.SideEffects)
				if len(w.Rules) == 0 {
					c.errorf("%s: webhook %s has no rules", d, w.Name)
				}
			}
		case "ValidatingWebhookConfiguration":
			var cfg admissionregistrationv1.ValidatingWebhookConfiguration
			if !c.decode(d, &cfg) {
				continue
			}
			annots = cfg.Annotations
			for _, w := range cfg.Webhooks {
				names, clients = append(names, w.Name), append(clients, w.ClientConfig)
				fails, effects = append(fails, w.FailurePolicy), append(effects, w.SideEffects)
				if len(w.Rules) == 0 {
					c.errorf("%s: webhook %s has no rules", d, w.Name)
				}
			}
		default:
			continue
		}
		comp := d.labels["app.kubernetes.io/component"]
		if d.name != fullname(comp) {
			c.errorf("%s: name is not %s, its component's", d, fullname(comp))
		}
		if exp := fixtureWebhooks[comp][d.kind]; !slices.Equal(names, exp) {
			c.errorf("%s: webhooks %v, want %v", d, names, exp)
		}
		for i, cc := range clients {
			s := cc.Service
			if s == nil || s.Name != fullname(comp)+"-webhook" || s.Namespace != namespace ||
				s.Port == nil || *s.Port != 443 || s.Path == nil || *s.Path == "" || cc.URL != nil {
				c.errorf("%s: webhook %s clientConfig %+v is not Service %s-webhook.%s:443 with a path", d, names[i], cc, fullname(comp), namespace)
			}
			if fails[i] == nil || *fails[i] != admissionregistrationv1.Fail {
				c.errorf("%s: webhook %s failurePolicy is not Fail", d, names[i])
			}
			want, ok := fixtureSideEffects[names[i]]
			if !ok {
				want = admissionregistrationv1.SideEffectClassNone
			}
			if effects[i] == nil || *effects[i] != want {
				c.errorf("%s: webhook %s sideEffects is not %s", d, names[i], want)
			}
		}
		inject := annots["cert-manager.io/inject-ca-from"]
		switch want.mode {
		case "cert-manager":
			if exp := namespace + "/" + fullname(comp) + "-webhook"; inject != exp {
				c.errorf("%s: cert-manager.io/inject-ca-from %q, want %q", d, inject, exp)
			}
		default:
			if inject != "" {
				c.errorf("%s: cert-manager.io/inject-ca-from set in self-signed mode", d)
			}
		}
	}
	return c.problems, nil
}
