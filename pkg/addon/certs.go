package addon

import (
	"crypto/tls"
	"net/http"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// minTLS is the oldest TLS version the webhook server accepts.
const minTLS = tls.VersionTLS12

func webhookTLS(c *tls.Config) { c.MinVersion = minTLS }

// secretScoped is the manager given to cert-controller's rotator. The rotator builds a cache of
// its own, which lists and watches every Secret of the namespace; through this manager's config
// those requests name the certificate Secret (fieldSelector metadata.name=...), which the
// apiserver authorizes against RBAC resourceNames. So the chart's Role grants one Secret by name,
// not every Secret of the release namespace, where the other add-ons keep theirs.
type secretScoped struct {
	manager.Manager
	cfg *rest.Config
}

func (m secretScoped) GetConfig() *rest.Config { return m.cfg }

func scopeToSecret(mgr manager.Manager, secret types.NamespacedName) manager.Manager {
	cfg := rest.CopyConfig(mgr.GetConfig())
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return secretByName{next: rt, path: "/api/v1/namespaces/" + secret.Namespace + "/secrets", name: secret.Name}
	})
	return secretScoped{Manager: mgr, cfg: cfg}
}

// secretByName adds fieldSelector metadata.name=name to list and watch requests of path.
type secretByName struct {
	next       http.RoundTripper
	path, name string
}

func (s secretByName) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || req.URL.Path != s.path {
		return s.next.RoundTrip(req)
	}
	q := req.URL.Query()
	sel := "metadata.name=" + s.name
	if old := q.Get("fieldSelector"); old != "" && old != sel {
		sel = old + "," + sel
	}
	q.Set("fieldSelector", sel)
	req = req.Clone(req.Context()) // a RoundTripper must not change the caller's request
	u := *req.URL
	u.RawQuery = q.Encode()
	req.URL = &u
	return s.next.RoundTrip(req)
}
