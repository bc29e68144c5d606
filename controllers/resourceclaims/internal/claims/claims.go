// Package claims is what the resourceclaims webhooks and reconciler agree on: the feature gate,
// the templates a Job carries, the claim each template gives the Job (its name, whether the
// pod template's own claim of the same name shadows it), the ResourceClaim object to create,
// and the pod-spec changes that reference it.
package claims

import (
	"fmt"
	"slices"
	"strconv"
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// Gate is the feature gate of the add-on, named as JobSet KEP-762 names it. It is on by default:
// installing the controller is the opt-in. Off, the webhooks admit without mutating and the
// reconciler does nothing.
const Gate featuregate.Feature = "JobSetResourceClaimTemplates"

// Gates are the feature gates the binary understands.
var Gates = map[featuregate.Feature]featuregate.FeatureSpec{
	Gate: {Default: true, PreRelease: featuregate.Beta},
}

// JobAnnotationPath is the field path of the templates annotation on a Job.
var JobAnnotationPath = field.NewPath("metadata", "annotations").Key(contract.TemplatesAnnotationKey)

// Binding is what one template gives one Job.
type Binding struct {
	Template contract.ResourceClaimTemplate
	// ClaimName is the ResourceClaim's object name (contract.ResourceClaimName).
	ClaimName string
	// Shadowed: the pod template has a pod-level claim of the template's name of its own; it
	// wins, and the template gives the Job nothing (no claim, no reference).
	Shadowed bool
}

// HasTemplates tells whether the Job carries the templates annotation.
func HasTemplates(job *batchv1.Job) bool {
	_, ok := job.Annotations[contract.TemplatesAnnotationKey]
	return ok
}

// RestartAttempt is the JobSet restart attempt the Job belongs to (upstream's
// jobset.sigs.k8s.io/restart-attempt label, 0 when absent).
func RestartAttempt(job *batchv1.Job) (int, error) {
	v, ok := job.Labels[contract.RestartAttemptLabelKey]
	if !ok {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("label %s=%q is not a restart attempt (a non-negative integer)", contract.RestartAttemptLabelKey, v)
	}
	return n, nil
}

// Bindings parses the Job's templates and gives each its claim. The errors carry the field
// paths of the Job (metadata.annotations[...]); a template whose claim name is invalid is
// reported and left out.
func Bindings(job *batchv1.Job) ([]Binding, field.ErrorList) {
	attempt, err := RestartAttempt(job)
	if err != nil {
		return nil, field.ErrorList{field.Invalid(field.NewPath("metadata", "labels").Key(contract.RestartAttemptLabelKey), job.Labels[contract.RestartAttemptLabelKey], err.Error())}
	}
	return bindings(job.Annotations[contract.TemplatesAnnotationKey], JobAnnotationPath, job.Name, attempt, &job.Spec.Template.Spec)
}

// JobName is the name JobSet gives the Job of index jobIndex of the ReplicatedJob
// replicatedJob: <jobset>-<replicatedJob>-<jobIndex>.
func JobName(jobSet, replicatedJob string, jobIndex int) string {
	return fmt.Sprintf("%s-%s-%d", jobSet, replicatedJob, jobIndex)
}

// Ahead gives the bindings the Job of index jobIndex of the JobSet's i-th ReplicatedJob will
// get once JobSet creates it in the JobSet's current restart attempt, from the JobSet's own
// copy of the templates and pod template: the claims that can be made before the Job exists.
func Ahead(js *jobsetv1alpha2.JobSet, i, jobIndex int) ([]Binding, field.ErrorList) {
	rj := &js.Spec.ReplicatedJobs[i]
	return bindings(rj.Template.Annotations[contract.TemplatesAnnotationKey], contract.ReplicatedJobAnnotationPath(i, contract.TemplatesAnnotationKey),
		JobName(js.Name, rj.Name, jobIndex), int(js.Status.Restarts), &rj.Template.Spec.Template.Spec)
}

func bindings(value string, path *field.Path, job string, attempt int, spec *corev1.PodSpec) ([]Binding, field.ErrorList) {
	templates, errs := Parse(value, path)
	if len(errs) > 0 {
		return nil, errs
	}
	out := make([]Binding, 0, len(templates))
	for i, t := range templates {
		name, err := contract.ResourceClaimName(job, t.Name, attempt)
		if err != nil {
			errs = append(errs, field.Invalid(path.Index(i).Child("metadata", "name"), t.Name, err.Error()))
			continue
		}
		out = append(out, Binding{Template: t, ClaimName: name, Shadowed: shadowed(spec, t.Name, name)})
	}
	return out, errs
}

// parsed caches the parses of annotation values: every Job of a ReplicatedJob carries the
// same value, and the Job webhook is on the path of each. Entries are never changed; the cache
// is emptied when it is full.
var parsed struct {
	sync.Mutex
	m map[parseKey]parseResult
}

type parseKey struct{ value, path string }

type parseResult struct {
	templates []contract.ResourceClaimTemplate
	errs      field.ErrorList
}

const parseCacheSize = 512

// Parse is contract.ParseResourceClaimTemplates, cached. Callers must
// not change what it returns.
func Parse(value string, path *field.Path) ([]contract.ResourceClaimTemplate, field.ErrorList) {
	key := parseKey{value, path.String()}
	parsed.Lock()
	r, ok := parsed.m[key]
	parsed.Unlock()
	if ok {
		return r.templates, r.errs
	}
	r.templates, r.errs = contract.ParseResourceClaimTemplates(value, path)
	parsed.Lock()
	if parsed.m == nil || len(parsed.m) >= parseCacheSize {
		parsed.m = make(map[parseKey]parseResult, parseCacheSize)
	}
	parsed.m[key] = r
	parsed.Unlock()
	return r.templates, r.errs
}

// shadowed tells whether spec has a pod-level claim called template that is not the add-on's
// own reference to claim.
func shadowed(spec *corev1.PodSpec, template, claim string) bool {
	i := slices.IndexFunc(spec.ResourceClaims, func(c corev1.PodResourceClaim) bool { return c.Name == template })
	if i < 0 {
		return false
	}
	own := spec.ResourceClaims[i].ResourceClaimName
	return own == nil || *own != claim || spec.ResourceClaims[i].ResourceClaimTemplateName != nil
}

// Owner is the controller owner reference of a claim to owner (a Job, or the JobSet for a
// claim made ahead of its Job). It does not block the owner's deletion, so that the controller
// needs no permission on finalizers.
func Owner(owner metav1.Object, gvk schema.GroupVersionKind) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         gvk.GroupVersion().String(),
		Kind:               gvk.Kind,
		Name:               owner.GetName(),
		UID:                owner.GetUID(),
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(false),
	}
}

// JobOwner is the owner reference of a claim to its Job.
func JobOwner(job *batchv1.Job) metav1.OwnerReference {
	return Owner(job, batchv1.SchemeGroupVersion.WithKind("Job"))
}

// JobSetOwner is the owner reference of a claim made ahead of its Job, to the JobSet.
func JobSetOwner(js *jobsetv1alpha2.JobSet) metav1.OwnerReference {
	return Owner(js, jobsetv1alpha2.GroupVersion.WithKind("JobSet"))
}

// Claim is the ResourceClaim b gives a Job of the JobSet jobSet, of ReplicatedJob
// replicatedJob and index jobIndex: the template's spec, labels and annotations, the add-on's
// labels, and owner as its controller.
func Claim(namespace, jobSet, replicatedJob string, jobIndex int, owner metav1.OwnerReference, b Binding) *resourcev1.ResourceClaim {
	labels := make(map[string]string, len(b.Template.Labels)+5)
	for k, v := range b.Template.Labels {
		labels[k] = v
	}
	labels[contract.ManagedByLabelKey] = contract.ResourceClaimsManagedByValue
	labels[contract.ResourceClaimTemplateLabelKey] = b.Template.Name
	labels[contract.JobSetNameLabelKey] = jobSet
	labels[contract.ReplicatedJobNameLabelKey] = replicatedJob
	labels[contract.JobIndexLabelKey] = strconv.Itoa(jobIndex)
	var annotations map[string]string
	if len(b.Template.Annotations) > 0 {
		annotations = make(map[string]string, len(b.Template.Annotations))
		for k, v := range b.Template.Annotations {
			annotations[k] = v
		}
	}
	return &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:            b.ClaimName,
			Namespace:       namespace,
			Labels:          labels,
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{owner},
		},
		Spec: *b.Template.Spec.DeepCopy(),
	}
}

// JobClaim is the claim b gives the existing Job job, owned by it.
func JobClaim(job *batchv1.Job, b Binding) *resourcev1.ResourceClaim {
	index, _ := strconv.Atoi(job.Labels[contract.JobIndexLabelKey])
	return Claim(job.Namespace, job.Labels[contract.JobSetNameLabelKey], job.Labels[contract.ReplicatedJobNameLabelKey], index, JobOwner(job), b)
}

// Identity is whose a claim of want's name must be to be want's Job's (contract.Identity.Of):
// the add-on's labels naming the JobSet, ReplicatedJob, Job index and template, and want's
// controller (its Job, or its JobSet for a claim made ahead) by UID. A Job at admission has no
// UID yet: a claim of its labels is then Retained, never Own.
func Identity(want *resourcev1.ResourceClaim) contract.Identity {
	parts := []string{contract.ResourceClaimTemplateLabelKey, contract.ReplicatedJobNameLabelKey, contract.JobIndexLabelKey}
	labels := make(map[string]string, len(parts))
	for _, k := range parts {
		labels[k] = want.Labels[k]
	}
	id := contract.Identity{ManagedBy: contract.ResourceClaimsManagedByValue, JobSet: want.Labels[contract.JobSetNameLabelKey], Labels: labels, Parts: parts}
	if ref := metav1.GetControllerOfNoCopy(want); ref != nil {
		id.UID = ref.UID
	}
	return id
}

// Finished tells whether the Job has finished: its Complete or Failed condition is True.
func Finished(job *batchv1.Job) bool {
	return jobsets.JobFinished(job)
}

// Injected says what Inject changed in a pod spec.
type Injected struct {
	// PodClaims: spec.resourceClaims changed.
	PodClaims bool
	// Containers and InitContainers are the indexes of the containers whose
	// resources.claims changed.
	Containers, InitContainers []int
}

// Any tells whether anything changed.
func (in Injected) Any() bool {
	return in.PodClaims || len(in.Containers) > 0 || len(in.InitContainers) > 0
}

// Inject adds to spec what bindings give it: for each binding that is not shadowed, the
// pod-level claim {name: template, resourceClaimName: claim} and, in every container and init
// container the template targets, resources.claims {name: template}. It only appends, and adds
// nothing that is there already, so it is idempotent.
func Inject(spec *corev1.PodSpec, bindings []Binding) Injected {
	var in Injected
	for _, b := range bindings {
		if b.Shadowed {
			continue
		}
		if !slices.ContainsFunc(spec.ResourceClaims, func(c corev1.PodResourceClaim) bool { return c.Name == b.Template.Name }) {
			spec.ResourceClaims = append(spec.ResourceClaims, corev1.PodResourceClaim{Name: b.Template.Name, ResourceClaimName: ptr.To(b.ClaimName)})
			in.PodClaims = true
		}
		in.Containers = reference(spec.Containers, b.Template, in.Containers)
		in.InitContainers = reference(spec.InitContainers, b.Template, in.InitContainers)
	}
	return in
}

// reference adds resources.claims {name: t.Name} to the containers t targets that lack it, and
// returns changed with their indexes added.
func reference(containers []corev1.Container, t contract.ResourceClaimTemplate, changed []int) []int {
	for i := range containers {
		c := &containers[i]
		if !t.AppliesToContainer(c.Name) || slices.ContainsFunc(c.Resources.Claims, func(r corev1.ResourceClaim) bool { return r.Name == t.Name }) {
			continue
		}
		c.Resources.Claims = append(c.Resources.Claims, corev1.ResourceClaim{Name: t.Name})
		if !slices.Contains(changed, i) {
			changed = append(changed, i)
		}
	}
	return changed
}
