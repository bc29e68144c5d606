package addon

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	clientfeatures "k8s.io/client-go/features"

	"github.com/jobset-addons/jobset-addons/pkg/addon/version"
)

func TestRunRefusesBadFlags(t *testing.T) {
	cases := map[string]struct {
		args    []string
		wantErr string
	}{
		"cert mode":     {args: []string{"--cert-mode=vault"}, wantErr: "--cert-mode"},
		"log format":    {args: []string{"--log-format=xml"}, wantErr: "--log-format"},
		"log level":     {args: []string{"--log-level=loud"}, wantErr: "--log-level"},
		"qps":           {args: []string{"--kube-api-qps=0"}, wantErr: "--kube-api-qps"},
		"event qps":     {args: []string{"--event-qps=0"}, wantErr: "--event-qps"},
		"shutdown":      {args: []string{"--shutdown-delay=-1s"}, wantErr: "--shutdown-delay"},
		"unknown flag":  {args: []string{"--no-such-flag"}, wantErr: "no-such-flag"},
		"unknown gate":  {args: []string{"--feature-gates=NoSuchGate=true"}, wantErr: "NoSuchGate"},
		"lease without": {args: []string{"--leader-election-namespace="}, wantErr: "--leader-election-namespace"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := Run(context.Background(), Options{Name: "test"}, tc.args, nil)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Run(%v) = %v, want an error naming %s", tc.args, err, tc.wantErr)
			}
		})
	}
}

func TestRunVersion(t *testing.T) {
	defer func(w io.Writer) { stdout = w }(stdout)
	var out bytes.Buffer
	stdout = &out
	// No cluster: --version must answer before any configuration is loaded.
	if err := Run(context.Background(), Options{Name: "test"}, []string{"--version"}, nil); err != nil {
		t.Fatalf("Run(--version) = %v", err)
	}
	if got, want := out.String(), "test "+version.String()+"\n"; got != want {
		t.Errorf("--version printed %q, want %q", got, want)
	}
}

// client-go's gates are switched by --feature-gates, WatchListClient off unless turned on.
func TestClientGates(t *testing.T) {
	defer func(w io.Writer) { stdout = w }(stdout)
	stdout = io.Discard
	for args, want := range map[string]bool{"": false, "--feature-gates=WatchListClient=true": true, "--feature-gates=WatchListClient=false": false} {
		if err := Run(context.Background(), Options{Name: "test"}, append(strings.Fields(args), "--version"), nil); err != nil {
			t.Fatalf("Run(%s --version) = %v", args, err)
		}
		if got := clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient); got != want {
			t.Errorf("with %q, client-go's WatchListClient = %v, want %v", args, got, want)
		}
	}
}
