package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
)

const (
	testDriver = "gpu.e2e.jobset-addons.io"
	testUID    = "0b7c2d4e-1111-2222-3333-444455556666"
)

func TestNames(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"kind", cdiKind(testDriver), "gpu.e2e.jobset-addons.io/claim"},
		{"spec file", cdiSpecFileName(testDriver, testUID), "gpu.e2e.jobset-addons.io-" + testUID + ".json"},
		{"device name", cdiDeviceName(testUID, "gpu-3"), testUID + "-gpu-3"},
		{"device ID", cdiDeviceID(testDriver, testUID, "gpu-3"), "gpu.e2e.jobset-addons.io/claim=" + testUID + "-gpu-3"},
		{"env gpu-0", deviceEnvName("gpu-0"), "DRA_DEVICE_GPU_0"},
		{"env digits and dots", deviceEnvName("nic.10-a"), "DRA_DEVICE_NIC_10_A"},
		{"env upper kept", deviceEnvName("Gpu7"), "DRA_DEVICE_GPU7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func claim(results ...resourceapi.DeviceRequestAllocationResult) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "job-0-gpu", UID: types.UID(testUID)},
	}
	if results != nil {
		c.Status.Allocation = &resourceapi.AllocationResult{
			Devices: resourceapi.DeviceAllocationResult{Results: results},
		}
	}
	return c
}

func result(request, driver, device string) resourceapi.DeviceRequestAllocationResult {
	return resourceapi.DeviceRequestAllocationResult{Request: request, Driver: driver, Pool: "node-a", Device: device}
}

func TestClaimDevicesAndSpec(t *testing.T) {
	tests := []struct {
		name        string
		claim       *resourceapi.ResourceClaim
		wantDevices []preparedDevice
		wantSpec    cdiSpec
	}{
		{
			name:  "not allocated",
			claim: claim(),
		},
		{
			name:  "other driver only",
			claim: claim(result("gpu", "other.example.com", "gpu-0")),
		},
		{
			name:  "two devices, other driver skipped",
			claim: claim(result("gpu", testDriver, "gpu-0"), result("nic", "other.example.com", "nic-0"), result("gpu", testDriver, "gpu-5")),
			wantDevices: []preparedDevice{
				{Request: "gpu", Pool: "node-a", Device: "gpu-0", CDIDevID: testDriver + "/claim=" + testUID + "-gpu-0"},
				{Request: "gpu", Pool: "node-a", Device: "gpu-5", CDIDevID: testDriver + "/claim=" + testUID + "-gpu-5"},
			},
			wantSpec: cdiSpec{
				Version:        "0.6.0",
				Kind:           testDriver + "/claim",
				ContainerEdits: cdiContainerEdits{Env: []string{"DRA_CLAIM=ns/job-0-gpu"}},
				Devices: []cdiDevice{
					{Name: testUID + "-gpu-0", ContainerEdits: cdiContainerEdits{Env: []string{"DRA_DEVICE_GPU_0=gpu-0"}}},
					{Name: testUID + "-gpu-5", ContainerEdits: cdiContainerEdits{Env: []string{"DRA_DEVICE_GPU_5=gpu-5"}}},
				},
			},
		},
		{
			name:  "one device for two requests is one CDI device",
			claim: claim(result("a", testDriver, "gpu-1"), result("b/sub", testDriver, "gpu-1")),
			wantDevices: []preparedDevice{
				{Request: "a", Pool: "node-a", Device: "gpu-1", CDIDevID: testDriver + "/claim=" + testUID + "-gpu-1"},
				{Request: "b/sub", Pool: "node-a", Device: "gpu-1", CDIDevID: testDriver + "/claim=" + testUID + "-gpu-1"},
			},
			wantSpec: cdiSpec{
				Version:        "0.6.0",
				Kind:           testDriver + "/claim",
				ContainerEdits: cdiContainerEdits{Env: []string{"DRA_CLAIM=ns/job-0-gpu"}},
				Devices: []cdiDevice{
					{Name: testUID + "-gpu-1", ContainerEdits: cdiContainerEdits{Env: []string{"DRA_DEVICE_GPU_1=gpu-1"}}},
				},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := claimDevices(testDriver, tt.claim)
			if diff := cmp.Diff(tt.wantDevices, got); diff != "" {
				t.Errorf("claimDevices (-want +got):\n%s", diff)
			}
			if len(got) == 0 {
				return
			}
			spec := buildCDISpec(testDriver, tt.claim.Namespace, tt.claim.Name, string(tt.claim.UID), got)
			if diff := cmp.Diff(tt.wantSpec, spec); diff != "" {
				t.Errorf("buildCDISpec (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSpecJSON pins the file format that the container runtime parses.
func TestSpecJSON(t *testing.T) {
	dir := t.TempDir()
	spec := buildCDISpec(testDriver, "ns", "c", "u1", []preparedDevice{{Request: "gpu", Pool: "p", Device: "gpu-2"}})
	if err := writeCDISpec(dir, "x.json", spec); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "x.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"cdiVersion":     "0.6.0",
		"kind":           "gpu.e2e.jobset-addons.io/claim",
		"containerEdits": map[string]any{"env": []any{"DRA_CLAIM=ns/c"}},
		"devices": []any{
			map[string]any{
				"name":           "u1-gpu-2",
				"containerEdits": map[string]any{"env": []any{"DRA_DEVICE_GPU_2=gpu-2"}},
			},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("spec file (-want +got):\n%s", diff)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if diff := cmp.Diff([]string{"x.json"}, names); diff != "" {
		t.Errorf("files left in dir (-want +got):\n%s", diff)
	}
	info, err := os.Stat(filepath.Join(dir, "x.json"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(os.FileMode(0o644), info.Mode().Perm()); diff != "" {
		t.Errorf("mode (-want +got):\n%s", diff)
	}
}

// TestPrepareUnprepare runs the DRAPlugin methods against a temporary CDI directory:
// prepare twice (idempotent), unprepare twice (a missing file is fine).
func TestPrepareUnprepare(t *testing.T) {
	tests := []struct {
		name        string
		claim       *resourceapi.ResourceClaim
		wantDevices []kubeletplugin.Device
		wantFile    bool
	}{
		{
			name:        "no device of this driver",
			claim:       claim(result("gpu", "other.example.com", "gpu-0")),
			wantDevices: []kubeletplugin.Device{},
		},
		{
			name:  "two devices",
			claim: claim(result("gpu", testDriver, "gpu-0"), result("gpu", testDriver, "gpu-1")),
			wantDevices: []kubeletplugin.Device{
				{Requests: []string{"gpu"}, PoolName: "node-a", DeviceName: "gpu-0", CDIDeviceIDs: []string{testDriver + "/claim=" + testUID + "-gpu-0"}},
				{Requests: []string{"gpu"}, PoolName: "node-a", DeviceName: "gpu-1", CDIDeviceIDs: []string{testDriver + "/claim=" + testUID + "-gpu-1"}},
			},
			wantFile: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			d := &driver{name: testDriver, cdiDir: dir, stop: func(error) {}}
			ctx := context.Background()
			file := filepath.Join(dir, cdiSpecFileName(testDriver, testUID))
			var first []byte
			for i := range 2 {
				res, err := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{tt.claim})
				if err != nil {
					t.Fatal(err)
				}
				want := map[types.UID]kubeletplugin.PrepareResult{tt.claim.UID: {Devices: tt.wantDevices}}
				if diff := cmp.Diff(want, res); diff != "" {
					t.Fatalf("prepare %d (-want +got):\n%s", i, diff)
				}
				data, err := os.ReadFile(file)
				if gotFile := err == nil; gotFile != tt.wantFile {
					t.Fatalf("prepare %d: spec file exists = %v, want %v (%v)", i, gotFile, tt.wantFile, err)
				}
				if i == 0 {
					first = data
				} else if diff := cmp.Diff(string(first), string(data)); diff != "" {
					t.Errorf("second prepare changed the spec (-first +second):\n%s", diff)
				}
			}
			obj := kubeletplugin.NamespacedObject{
				NamespacedName: types.NamespacedName{Namespace: tt.claim.Namespace, Name: tt.claim.Name},
				UID:            tt.claim.UID,
			}
			for i := range 2 {
				res, err := d.UnprepareResourceClaims(ctx, []kubeletplugin.NamespacedObject{obj})
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(map[types.UID]error{tt.claim.UID: nil}, res); diff != "" {
					t.Fatalf("unprepare %d (-want +got):\n%s", i, diff)
				}
				if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("unprepare %d: spec file still there (%v)", i, err)
				}
			}
		})
	}
}

func TestNodeResources(t *testing.T) {
	res := nodeResources("kind-worker", 3)
	pool, ok := res.Pools["kind-worker"]
	if !ok || len(res.Pools) != 1 || len(pool.Slices) != 1 {
		t.Fatalf("want one pool kind-worker with one slice, got %+v", res)
	}
	var got []string
	for _, dev := range pool.Slices[0].Devices {
		idx := dev.Attributes["index"].IntValue
		if idx == nil {
			t.Fatalf("device %s has no int attribute index", dev.Name)
		}
		got = append(got, fmt.Sprintf("%s=%d", dev.Name, *idx))
	}
	if diff := cmp.Diff([]string{"gpu-0=0", "gpu-1=1", "gpu-2=2"}, got); diff != "" {
		t.Errorf("devices (-want +got):\n%s", diff)
	}
}
