// Command dra-driver is a small but real DRA (Dynamic Resource Allocation, resource.k8s.io/v1)
// kubelet plugin for the e2e kind cluster. It runs as a DaemonSet (e2e/kindbed/manifests/dra-driver.yaml)
// and lets an e2e test prove that a ResourceClaim made by the resourceclaims add-on gets allocated
// by the scheduler and that the container sees what was allocated.
//
// On each node it publishes one ResourceSlice, pool named after the node, with --devices devices
// gpu-0, gpu-1, … that each carry an int attribute "index". When the kubelet prepares a claim it
// writes a CDI spec /var/run/cdi/<driver>-<claimUID>.json whose devices set, in every container
// that uses the claim, DRA_DEVICE_GPU_<n>=gpu-<n> for each allocated device and
// DRA_CLAIM=<namespace>/<name>. Unpreparing the claim removes that file.
//
//	dra-driver --driver-name gpu.e2e.jobset-addons.io --devices 8 --cdi-dir /var/run/cdi
//
// The node's name comes from the environment variable NODE_NAME (the downward API's spec.nodeName).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

const (
	defaultDriverName = "gpu.e2e.jobset-addons.io"
	// maxDevices is the most devices one ResourceSlice may hold (resource.k8s.io/v1).
	maxDevices = resourceapi.ResourceSliceMaxDevices
)

func main() {
	klog.InitFlags(nil)
	var cfg config
	flag.StringVar(&cfg.driverName, "driver-name", defaultDriverName, "DRA driver name; also the vendor part of the CDI kind `<driver>/claim`")
	flag.IntVar(&cfg.devices, "devices", 8, "number of devices gpu-0 … gpu-<N-1> to publish for this node")
	flag.StringVar(&cfg.cdiDir, "cdi-dir", "/var/run/cdi", "directory the container runtime reads CDI specs from")
	flag.StringVar(&cfg.pluginsDir, "plugins-dir", kubeletplugin.KubeletPluginsDir, "kubelet plugins directory; the DRA socket is created in <plugins-dir>/<driver>")
	flag.StringVar(&cfg.registryDir, "registry-dir", kubeletplugin.KubeletRegistryDir, "kubelet plugin registration directory")
	flag.StringVar(&cfg.kubeconfig, "kubeconfig", "", "kubeconfig file; in-cluster configuration when empty")
	flag.Parse()
	cfg.nodeName = os.Getenv("NODE_NAME")

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	err := run(ctx, cfg)
	stop()
	if err != nil {
		klog.ErrorS(err, "DRA driver failed")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
	klog.Flush()
}

type config struct {
	driverName  string
	devices     int
	cdiDir      string
	pluginsDir  string
	registryDir string
	kubeconfig  string
	nodeName    string
}

// fatalError is the cause with which HandleError stops the driver.
type fatalError struct{ err error }

func (e *fatalError) Error() string { return e.err.Error() }
func (e *fatalError) Unwrap() error { return e.err }

// run starts the kubelet plugin, publishes this node's devices and serves the kubelet until
// ctx is done (SIGTERM) or the helper reports a fatal error.
func run(ctx context.Context, cfg config) error {
	if cfg.nodeName == "" {
		return errors.New("NODE_NAME is not set")
	}
	if cfg.devices < 0 || cfg.devices > maxDevices {
		return fmt.Errorf("--devices=%d: must be between 0 and %d", cfg.devices, maxDevices)
	}
	logger := klog.Background().WithValues("driver", cfg.driverName, "node", cfg.nodeName)
	ctx = klog.NewContext(ctx, logger)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	restConfig, err := clientcmd.BuildConfigFromFlags("", cfg.kubeconfig)
	if err != nil {
		return fmt.Errorf("kube config: %w", err)
	}
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return fmt.Errorf("kube client: %w", err)
	}

	// The helper expects both directories to exist; the DRA socket's own one is ours to make.
	pluginDataDir := filepath.Join(cfg.pluginsDir, cfg.driverName)
	for _, dir := range []string{pluginDataDir, cfg.cdiDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}

	d := &driver{name: cfg.driverName, cdiDir: cfg.cdiDir, stop: cancel}
	helper, err := kubeletplugin.Start(ctx, d,
		kubeletplugin.DriverName(cfg.driverName),
		kubeletplugin.KubeClient(client),
		kubeletplugin.NodeName(cfg.nodeName),
		kubeletplugin.PluginDataDirectoryPath(pluginDataDir),
		kubeletplugin.RegistrarDirectoryPath(cfg.registryDir),
		// No health reporting: the kubelet then does not watch for it at all.
		kubeletplugin.HealthService(false),
	)
	if err != nil {
		return fmt.Errorf("start kubelet plugin: %w", err)
	}
	defer helper.Stop()

	logger.Info("DRA driver serving the kubelet; publishing devices",
		"devices", cfg.devices, "cdiDir", cfg.cdiDir, "pluginDir", pluginDataDir, "registryDir", cfg.registryDir)
	// The first call waits for the ResourceSlice informer to sync (or for ctx to end).
	if err := helper.PublishResources(ctx, nodeResources(cfg.nodeName, cfg.devices)); err != nil && ctx.Err() == nil {
		return fmt.Errorf("publish resources: %w", err)
	}

	<-ctx.Done()
	var fatal *fatalError
	if cause := context.Cause(ctx); errors.As(cause, &fatal) {
		return fatal
	}
	logger.Info("Stopping DRA driver")
	return nil
}

// nodeResources is the one pool, named after the node, with devices gpu-0 … gpu-<n-1>.
func nodeResources(nodeName string, n int) resourceslice.DriverResources {
	devices := make([]resourceapi.Device, 0, n)
	for i := range n {
		devices = append(devices, resourceapi.Device{
			Name: fmt.Sprintf("gpu-%d", i),
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				"index": {IntValue: ptr.To(int64(i))},
			},
		})
	}
	return resourceslice.DriverResources{
		Pools: map[string]resourceslice.Pool{
			nodeName: {Slices: []resourceslice.Slice{{Devices: devices}}},
		},
	}
}

// driver implements kubeletplugin.DRAPlugin. It keeps no state: everything it needs to undo
// a preparation is the claim's UID, which names the CDI spec file. The helper serializes calls.
type driver struct {
	name   string
	cdiDir string
	stop   context.CancelCauseFunc
}

var _ kubeletplugin.DRAPlugin = (*driver)(nil)

// PrepareResourceClaims writes one CDI spec per claim and hands back its device IDs.
func (d *driver) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	logger := klog.FromContext(ctx)
	result := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for _, claim := range claims {
		devices, err := d.prepareClaim(claim)
		if err != nil {
			logger.Error(err, "Preparing claim failed", "claim", klog.KObj(claim), "uid", claim.UID)
			result[claim.UID] = kubeletplugin.PrepareResult{Err: err}
			continue
		}
		logger.Info("Prepared claim", "claim", klog.KObj(claim), "uid", claim.UID, "devices", len(devices))
		result[claim.UID] = kubeletplugin.PrepareResult{Devices: devices}
	}
	return result, nil
}

func (d *driver) prepareClaim(claim *resourceapi.ResourceClaim) ([]kubeletplugin.Device, error) {
	prepared := claimDevices(d.name, claim)
	if len(prepared) == 0 {
		// Nothing of ours in it (the helper only passes allocated claims).
		return []kubeletplugin.Device{}, nil
	}
	uid := string(claim.UID)
	spec := buildCDISpec(d.name, claim.Namespace, claim.Name, uid, prepared)
	if err := writeCDISpec(d.cdiDir, cdiSpecFileName(d.name, uid), spec); err != nil {
		return nil, err
	}
	devices := make([]kubeletplugin.Device, 0, len(prepared))
	for _, p := range prepared {
		devices = append(devices, kubeletplugin.Device{
			Requests:     []string{p.Request},
			PoolName:     p.Pool,
			DeviceName:   p.Device,
			CDIDeviceIDs: []string{p.CDIDevID},
		})
	}
	return devices, nil
}

// UnprepareResourceClaims removes each claim's CDI spec; one that is gone already is fine.
func (d *driver) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	logger := klog.FromContext(ctx)
	result := make(map[types.UID]error, len(claims))
	for _, claim := range claims {
		err := removeCDISpec(d.cdiDir, cdiSpecFileName(d.name, string(claim.UID)))
		if err != nil {
			logger.Error(err, "Unpreparing claim failed", "claim", claim)
		} else {
			logger.Info("Unprepared claim", "claim", claim)
		}
		result[claim.UID] = err
	}
	return result, nil
}

// HandleError logs background errors; one that the helper does not mark recoverable stops the driver.
func (d *driver) HandleError(ctx context.Context, err error, msg string) {
	logger := klog.FromContext(ctx)
	if errors.Is(err, kubeletplugin.ErrRecoverable) {
		logger.Error(err, msg)
		return
	}
	logger.Error(err, msg, "fatal", true)
	d.stop(&fatalError{err: fmt.Errorf("%s: %w", msg, err)})
}

// WatchHealthStatus is never called (HealthService(false)); the driver reports no health.
func (d *driver) WatchHealthStatus(context.Context, chan<- kubeletplugin.DeviceHealthReport) error {
	return kubeletplugin.ErrHealthNotSupported
}
