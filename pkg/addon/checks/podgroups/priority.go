package podgroups

import "fmt"

// PriorityClassReader gets PriorityClasses (a cached client).
type PriorityClassReader interface {
	PriorityClassValue(name string) (int32, bool)
}

// PriorityClass is the gang's PodGroup priorityClassName: the one class of its pod templates,
// or, when they differ, the one with the highest value (a class that does not exist counts as
// 0, and so does no class). warning is not empty when they differ, and says which won.
func (g Gang) PriorityClass(classes PriorityClassReader) (name, warning string) {
	if len(g.PriorityClassNames) == 1 {
		return g.PriorityClassNames[0], ""
	}
	best, bestValue := "", int32(0)
	for i, pc := range g.PriorityClassNames {
		v := int32(0)
		if pc != "" {
			v, _ = classes.PriorityClassValue(pc)
		}
		if i == 0 || v > bestValue {
			best, bestValue = pc, v
		}
	}
	return best, fmt.Sprintf("the pod templates of PodGroup %s have different priorityClassName %q: the PodGroup gets %q, the highest-valued (%d)",
		g.Name, g.PriorityClassNames, best, bestValue)
}
