package bench

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/jobset-addons/jobset-addons/e2e/testbed"
)

// volumeClaimsPeers: per-pod PVCs of one JobSet against a StatefulSet's volumeClaimTemplates
// and an Indexed Job's generic ephemeral volumes.
func volumeClaimsPeers(ctx context.Context, b *testing.B, tb testbed.Config, c client.Client, smoke bool) []peerPair {
	b.Fatal("volumeclaims peers: not yet")
	return nil
}

// resourceClaimsPeers: per-Job claims against a ResourceClaimTemplate's per-pod claims.
func resourceClaimsPeers(ctx context.Context, b *testing.B, tb testbed.Config, c client.Client, smoke bool) []peerPair {
	b.Fatal("resourceclaims peers: not yet")
	return nil
}
