package main

import (
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/sequencer"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// barrierFlags are the flags of the start barrier's init container.
type barrierFlags struct {
	image                                            string
	cpuRequest, cpuLimit, memoryRequest, memoryLimit quantityFlag
}

func (f *barrierFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.image, "barrier-image", sequencer.DefaultBarrierImage(),
		"Image of the start barrier's init container, which the webhook adds to JobSets with the "+contract.StartBarrierAnnotationKey+" annotation (the chart pins it by digest)")
	f.cpuRequest = quantityFlag{sequencer.DefaultBarrierCPURequest}
	f.cpuLimit = quantityFlag{sequencer.DefaultBarrierCPULimit}
	f.memoryRequest = quantityFlag{sequencer.DefaultBarrierMemoryRequest}
	f.memoryLimit = quantityFlag{sequencer.DefaultBarrierMemoryLimit}
	fs.Var(&f.cpuRequest, "barrier-cpu-request", "CPU request of the start barrier's init container")
	fs.Var(&f.cpuLimit, "barrier-cpu-limit", "CPU limit of the start barrier's init container (at least its request)")
	fs.Var(&f.memoryRequest, "barrier-memory-request", "Memory request of the start barrier's init container")
	fs.Var(&f.memoryLimit, "barrier-memory-limit", "Memory limit of the start barrier's init container (at least its request)")
}

// settings are the flags' settings, checked: an error stops the sequencer at startup.
func (f *barrierFlags) settings() (sequencer.BarrierSettings, error) {
	s := sequencer.BarrierSettings{
		Image:     f.image,
		Resources: sequencer.BarrierResources(f.cpuRequest.q, f.cpuLimit.q, f.memoryRequest.q, f.memoryLimit.q),
	}
	return s, s.Validate()
}

// quantityFlag is a resource.Quantity flag.
type quantityFlag struct{ q resource.Quantity }

func (f *quantityFlag) String() string { return f.q.String() }
func (f *quantityFlag) Type() string   { return "quantity" }
func (f *quantityFlag) Set(s string) error {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return err
	}
	f.q = q
	return nil
}
