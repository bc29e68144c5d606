// Command kubectl-jobset_addons is a kubectl plugin: `kubectl jobset-addons status JOBSET` prints
// what the jobset-addons controllers did to one JobSet — its PVCs, ResourceClaims, stages and
// gated pods, PodGroups, the objects the API server refuses to let the add-ons make for it, and
// its last Events. It finds all of it through the contract's labels
// and annotations alone (pkg/contract), and needs only read access. `lint` checks manifests
// offline as the add-ons' webhooks would (lint.go), and `explain` prints an annotation's
// schema (explain.go).
//
//	kubectl jobset-addons status [-n NAMESPACE] [--events N] [--kubeconfig FILE] JOBSET
//	kubectl jobset-addons lint -f FILE... [--output json]
//	kubectl jobset-addons explain ADD-ON[.FIELD...]
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/jobset-addons/jobset-addons/pkg/addon/version"
)

func main() {
	args := os.Args[1:]
	if len(args) > 0 {
		switch args[0] {
		case "lint":
			os.Exit(Lint(args[1:], os.Stdin, os.Stdout, os.Stderr))
		case "explain":
			os.Exit(Explain(args[1:], os.Stdout, os.Stderr))
		}
	}
	if err := run(context.Background(), args, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "kubectl jobset-addons:", err)
		os.Exit(1)
	}
}

const usage = `usage: kubectl jobset-addons status [-n NAMESPACE] [--events N] [--kubeconfig FILE] JOBSET
       kubectl jobset-addons lint -f FILE... [--output json]
       kubectl jobset-addons explain ADD-ON[.FIELD...]
       kubectl jobset-addons --version

Prints what the jobset-addons controllers did to one JobSet: its PVCs (volumeclaims), its
ResourceClaims (resourceclaims), its stages and gated pods (sequencer), its PodGroups
(podgroups), the objects the API server refuses to let them make for it (told once each,
however old), and its last Events. lint checks manifests offline as the add-ons' webhooks
would; explain prints an annotation's fields. Each has its own --help.`

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := pflag.NewFlagSet("kubectl-jobset_addons", pflag.ContinueOnError)
	fs.Usage = func() { fmt.Fprintln(os.Stderr, usage) }
	namespace := fs.StringP("namespace", "n", "", "namespace of the JobSet (default: the kubeconfig context's)")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	kubeContext := fs.String("context", "", "kubeconfig context")
	events := fs.Int("events", 10, "how many of the JobSet's last Events to print")
	timeout := fs.Duration("request-timeout", 30*time.Second, "time limit of the whole command")
	showVersion := fs.Bool("version", false, "print the plugin's version and exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *showVersion {
		_, err := fmt.Fprintln(out, "kubectl-jobset_addons", version.String())
		return err
	}
	if fs.NArg() != 2 || fs.Arg(0) != "status" {
		fs.Usage()
		return fmt.Errorf("want: status JOBSET")
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = *kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{
		CurrentContext: *kubeContext, Context: clientcmdContext(*namespace),
	})
	ns, _, err := cc.Namespace()
	if err != nil {
		return err
	}
	rc, err := cc.ClientConfig()
	if err != nil {
		return err
	}
	c, err := client.New(rc, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	return Status(ctx, c, ns, fs.Arg(1), *events, out)
}
