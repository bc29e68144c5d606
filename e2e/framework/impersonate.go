package framework

import (
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
)

// ClientAs is a client of the testbed that acts as user, a member of groups (the test's admin
// impersonates them): what the API server's RBAC and admission policies do to that user's
// requests.
func ClientAs(t *testing.T, cfg *envconf.Config, user string, groups ...string) client.Client {
	t.Helper()
	rc := rest.CopyConfig(cfg.Client().RESTConfig())
	rc.QPS, rc.Burst = 100, 200
	rc.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	c, err := client.New(rc, client.Options{Scheme: Scheme})
	if err != nil {
		t.Fatalf("creating a client as %s: %v", user, err)
	}
	return c
}

// ServiceAccountClient is ClientAs the ServiceAccount name of namespace ns, with the groups the
// API server gives a ServiceAccount's token.
func ServiceAccountClient(t *testing.T, cfg *envconf.Config, ns, name string) client.Client {
	t.Helper()
	return ClientAs(t, cfg, "system:serviceaccount:"+ns+":"+name,
		"system:serviceaccounts", "system:serviceaccounts:"+ns, "system:authenticated")
}
