package testbed

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// addonKubeconfig applies the ServiceAccount, Roles, ClusterRoles and their bindings that the
// chart renders for the add-on (manifests), and writes a kubeconfig in dir that authenticates as
// that ServiceAccount with a token. The add-on then runs with exactly the permissions the chart
// grants it, so that an e2e suite fails on a missing one.
func (c Config) addonKubeconfig(ctx context.Context, cs kubernetes.Interface, manifests []byte, dir string) (string, error) {
	var account string
	for _, doc := range bytes.Split(manifests, []byte("\n---")) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return "", err
		}
		var err error
		switch meta.Kind {
		case "ServiceAccount":
			var o corev1.ServiceAccount
			if err = yaml.UnmarshalStrict(doc, &o); err == nil {
				account = o.Name
				err = upsert(ctx, cs.CoreV1().ServiceAccounts(AddonNamespace), &o)
			}
		case "ClusterRole":
			var o rbacv1.ClusterRole
			if err = yaml.UnmarshalStrict(doc, &o); err == nil {
				err = upsert(ctx, cs.RbacV1().ClusterRoles(), &o)
			}
		case "ClusterRoleBinding":
			var o rbacv1.ClusterRoleBinding
			if err = yaml.UnmarshalStrict(doc, &o); err == nil {
				err = upsert(ctx, cs.RbacV1().ClusterRoleBindings(), &o)
			}
		case "Role":
			var o rbacv1.Role
			if err = yaml.UnmarshalStrict(doc, &o); err == nil {
				err = upsert(ctx, cs.RbacV1().Roles(AddonNamespace), &o)
			}
		case "RoleBinding":
			var o rbacv1.RoleBinding
			if err = yaml.UnmarshalStrict(doc, &o); err == nil {
				err = upsert(ctx, cs.RbacV1().RoleBindings(AddonNamespace), &o)
			}
		}
		if err != nil {
			return "", fmt.Errorf("applying the chart's %s: %w", meta.Kind, err)
		}
	}
	if account == "" {
		return "", fmt.Errorf("the chart renders no ServiceAccount")
	}
	tok, err := cs.CoreV1().ServiceAccounts(AddonNamespace).CreateToken(ctx, account, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](24 * 3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("a token for ServiceAccount %s: %w", account, err)
	}
	admin, err := clientcmd.LoadFromFile(c.Kubeconfig())
	if err != nil {
		return "", err
	}
	cluster := admin.Clusters[admin.Contexts[admin.CurrentContext].Cluster]
	if cluster == nil {
		return "", fmt.Errorf("%s has no cluster for its current context", c.Kubeconfig())
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["testbed"] = cluster
	cfg.AuthInfos[account] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	cfg.Contexts[account] = &clientcmdapi.Context{Cluster: "testbed", AuthInfo: account}
	cfg.CurrentContext = account
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "kubeconfig")
	return path, clientcmd.WriteToFile(*cfg, path)
}
