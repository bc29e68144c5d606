package testbed

import (
	"context"
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// DevicesPerSlice is how many devices one ResourceSlice holds at most (the API's limit).
const DevicesPerSlice = 128

// PublishDevices publishes, for DRA claims of the DeviceClass class, slices ResourceSlices of
// DevicesPerSlice network-attached devices each (every node reaches them) of a driver named as
// the class, and the class itself, unless they exist. The testbed's kube-scheduler allocates
// them; kwok runs the pods without a driver on the node.
func PublishDevices(ctx context.Context, c Config, class string, slices int) error {
	cs, err := c.Clientset()
	if err != nil {
		return err
	}
	dc := &resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: class},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{
			CEL: &resourcev1.CELDeviceSelector{Expression: `device.driver == "` + class + `"`}}}},
	}
	if _, err := cs.ResourceV1().DeviceClasses().Create(ctx, dc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	for s := range slices {
		rs := &resourcev1.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", class, s)},
			Spec: resourcev1.ResourceSliceSpec{Driver: class, AllNodes: ptr.To(true),
				Pool: resourcev1.ResourcePool{Name: class, ResourceSliceCount: int64(slices)}},
		}
		for d := range DevicesPerSlice {
			rs.Spec.Devices = append(rs.Spec.Devices, resourcev1.Device{Name: fmt.Sprintf("d%d-%d", s, d)})
		}
		if _, err := cs.ResourceV1().ResourceSlices().Create(ctx, rs, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}
