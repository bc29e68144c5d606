package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
)

// cdiVersion is the version of the CDI specification that the spec files claim.
// 0.6.0 is understood by every container runtime that ships with DRA support.
const cdiVersion = "0.6.0"

// cdiClass is the class part of the CDI kind "<driver>/<class>".
const cdiClass = "claim"

// cdiSpec is the subset of a CDI spec file (https://github.com/cncf-tags/container-device-interface,
// SPEC.md) that this driver writes.
type cdiSpec struct {
	Version        string            `json:"cdiVersion"`
	Kind           string            `json:"kind"`
	Devices        []cdiDevice       `json:"devices"`
	ContainerEdits cdiContainerEdits `json:"containerEdits,omitzero"`
}

// cdiDevice is one named device of a CDI spec with the edits made to a container that gets it.
type cdiDevice struct {
	Name           string            `json:"name"`
	ContainerEdits cdiContainerEdits `json:"containerEdits"`
}

// cdiContainerEdits holds the container edits; this driver only sets environment variables.
type cdiContainerEdits struct {
	Env []string `json:"env,omitempty"`
}

// preparedDevice is one allocated device of one request, as handed back to the kubelet.
type preparedDevice struct {
	Request  string
	Pool     string
	Device   string
	CDIDevID string
}

// cdiKind is the CDI kind "<driver>/claim" under which all of a driver's claim specs are written.
func cdiKind(driver string) string {
	return driver + "/" + cdiClass
}

// cdiSpecFileName is the base name of the spec file for one claim: "<driver>-<claimUID>.json".
func cdiSpecFileName(driver, claimUID string) string {
	return driver + "-" + claimUID + ".json"
}

// cdiDeviceName is the CDI device name of one allocated device of a claim: "<claimUID>-<device>".
// The claim UID keeps names unique across claims, so a runtime's spec cache never hits a stale one.
func cdiDeviceName(claimUID, device string) string {
	return claimUID + "-" + device
}

// cdiDeviceID is the fully qualified CDI device name "<driver>/claim=<claimUID>-<device>"
// that the kubelet passes on to the container runtime.
func cdiDeviceID(driver, claimUID, device string) string {
	return cdiKind(driver) + "=" + cdiDeviceName(claimUID, device)
}

// deviceEnvName is the variable that tells a container it got device: "gpu-0" becomes
// "DRA_DEVICE_GPU_0". Everything but ASCII letters and digits turns into '_'.
func deviceEnvName(device string) string {
	var b strings.Builder
	b.WriteString("DRA_DEVICE_")
	for _, r := range device {
		switch {
		case r >= 'a' && r <= 'z':
			b.WriteRune(r - 'a' + 'A')
		case (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9'):
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// claimDevices returns the devices that driver got in claim's allocation, one entry per
// allocation result in the allocation's order. It is empty when the claim is not allocated
// or holds no device of driver.
func claimDevices(driver string, claim *resourceapi.ResourceClaim) []preparedDevice {
	if claim.Status.Allocation == nil {
		return nil
	}
	uid := string(claim.UID)
	var out []preparedDevice
	for _, r := range claim.Status.Allocation.Devices.Results {
		if r.Driver != driver {
			continue
		}
		out = append(out, preparedDevice{
			Request:  r.Request,
			Pool:     r.Pool,
			Device:   r.Device,
			CDIDevID: cdiDeviceID(driver, uid, r.Device),
		})
	}
	return out
}

// buildCDISpec is the spec for one claim's devices: one CDI device per distinct device
// (a device that serves two requests is listed once), each setting its DRA_DEVICE_* variable,
// and DRA_CLAIM=<namespace>/<name> for every container that gets any of them.
func buildCDISpec(driver, claimNamespace, claimName, claimUID string, devices []preparedDevice) cdiSpec {
	spec := cdiSpec{
		Version: cdiVersion,
		Kind:    cdiKind(driver),
		Devices: []cdiDevice{},
		ContainerEdits: cdiContainerEdits{
			Env: []string{"DRA_CLAIM=" + claimNamespace + "/" + claimName},
		},
	}
	seen := make(map[string]bool, len(devices))
	for _, d := range devices {
		if seen[d.Device] {
			continue
		}
		seen[d.Device] = true
		spec.Devices = append(spec.Devices, cdiDevice{
			Name: cdiDeviceName(claimUID, d.Device),
			ContainerEdits: cdiContainerEdits{
				Env: []string{deviceEnvName(d.Device) + "=" + d.Device},
			},
		})
	}
	return spec
}

// writeCDISpec writes spec as dir/name atomically: into a temporary file in dir first, then
// renamed over name, so a runtime that reads the directory never sees half a spec. Writing the
// same spec again leaves the same file.
func writeCDISpec(dir, name string, spec cdiSpec) (err error) {
	data, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return fmt.Errorf("encode CDI spec %s: %w", name, err)
	}
	data = append(data, '\n')

	// The temporary name must not end in .json or .yaml, or a runtime scanning dir
	// could load it (and then see a duplicate of every device) before the rename.
	tmp, err := os.CreateTemp(dir, "."+name+".*.tmp")
	if err != nil {
		return fmt.Errorf("create temporary CDI spec: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("chmod %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("sync %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("rename CDI spec into place: %w", err)
	}
	return nil
}

// removeCDISpec removes dir/name; a file that is already gone is no error.
func removeCDISpec(dir, name string) error {
	if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove CDI spec: %w", err)
	}
	return nil
}
