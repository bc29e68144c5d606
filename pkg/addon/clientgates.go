package addon

import (
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/component-base/featuregate"
)

// clientDefaults are client-go's gates whose default the add-ons change.
//
// WatchListClient is off: an informer then starts with a list served from the API server's watch
// cache (resourceVersion=0), as informers did before client-go 1.35, not with a watch of initial
// events, which the API server answers only once its watch cache has caught up with etcd. With
// 500 JobSets and 1,000 Jobs to list, that wait made podgroups' cold start 190 ms instead of
// 130 (make bench ADDON=podgroups). The add-ons' reconciles already take a cache that trails the
// API (an object made that the cache does not show yet answers 409 and is read; one deleted answers
// 404), and the lists are of their own objects and JobSets, small enough for the API server's
// memory. --feature-gates=WatchListClient=true turns it back on.
var clientDefaults = map[clientfeatures.Feature]bool{clientfeatures.WatchListClient: false}

// clientGates hands client-go's gates to gates (--feature-gates), with clientDefaults.
type clientGates struct {
	gates featuregate.MutableFeatureGate
}

func (g clientGates) Add(specs map[clientfeatures.Feature]clientfeatures.FeatureSpec) error {
	out := make(map[featuregate.Feature]featuregate.FeatureSpec, len(specs))
	for f, s := range specs {
		spec := featuregate.FeatureSpec{Default: s.Default, LockToDefault: s.LockToDefault, PreRelease: featuregate.GA}
		switch s.PreRelease {
		case clientfeatures.Alpha:
			spec.PreRelease = featuregate.Alpha
		case clientfeatures.Beta:
			spec.PreRelease = featuregate.Beta
		case clientfeatures.Deprecated:
			spec.PreRelease = featuregate.Deprecated
		}
		if d, ok := clientDefaults[f]; ok && !s.LockToDefault {
			spec.Default = d
		}
		out[featuregate.Feature(f)] = spec
	}
	return g.gates.Add(out)
}

func (g clientGates) Enabled(f clientfeatures.Feature) bool {
	return g.gates.Enabled(featuregate.Feature(f))
}

// withClientGates registers client-go's gates in gates and has client-go read them from it.
func withClientGates(gates featuregate.MutableFeatureGate) error {
	g := clientGates{gates}
	if err := clientfeatures.AddFeaturesToExistingFeatureGates(g); err != nil {
		return err
	}
	clientfeatures.ReplaceFeatureGates(g)
	return nil
}

// changedClientGates are client-go's gates whose default the add-ons change, as they are now.
func changedClientGates() map[string]bool {
	out := make(map[string]bool, len(clientDefaults))
	for f := range clientDefaults {
		out[string(f)] = clientfeatures.FeatureGates().Enabled(f)
	}
	return out
}
