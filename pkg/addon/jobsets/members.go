package jobsets

import (
	"fmt"
	"sort"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// MadeByJobSet tells whether the Job is one the JobSet's controller made, by the strongest rule
// the API offers: its controller reference is the JobSet (by UID), its replicatedjob-name and
// job-index labels name a Job the JobSet's spec asks for (index below replicas), and its name is
// the one upstream JobSet gives that Job, <jobset>-<replicatedJob>-<index>. Names are unique in
// a namespace, so a Job made by anyone else can at most take the name of one the JobSet would
// make — which upstream JobSet then takes for its own, too.
func MadeByJobSet(js *jobsetv1alpha2.JobSet, j *batchv1.Job) bool {
	ref := metav1.GetControllerOfNoCopy(j)
	if ref == nil || ref.UID != js.UID || ref.Kind != "JobSet" || j.Namespace != js.Namespace {
		return false
	}
	rjName := j.Labels[contract.ReplicatedJobNameLabelKey]
	rj := ReplicatedJob(js, rjName)
	if rj == nil {
		return false
	}
	idx, err := strconv.ParseInt(j.Labels[contract.JobIndexLabelKey], 10, 32)
	if err != nil || idx < 0 || int32(idx) >= rj.Replicas {
		return false
	}
	return j.Name == fmt.Sprintf("%s-%s-%d", js.Name, rjName, idx)
}

// Members are the Jobs of a JobSet that its controller made (MadeByJobSet), by UID: what
// decides which pods belong to the JobSet, and in which restart attempt, never the pods' own
// labels, which anyone who may create a pod can write.
type Members map[types.UID]*batchv1.Job

// MembersOf keeps, of jobs, those the JobSet's controller made.
func MembersOf(js *jobsetv1alpha2.JobSet, jobs []batchv1.Job) Members {
	m := Members{}
	for i := range jobs {
		if j := &jobs[i]; MadeByJobSet(js, j) {
			m[j.UID] = j
		}
	}
	return m
}

// JobOf is the member Job that controls the pod (its controller reference, by UID), or nil: a
// bare pod, or one whose Job is not the JobSet's, is no member whatever its labels say.
func (m Members) JobOf(p *corev1.Pod) *batchv1.Job {
	ref := metav1.GetControllerOfNoCopy(p)
	if ref == nil || ref.Kind != "Job" {
		return nil
	}
	return m[ref.UID]
}

// Attempt is the JobSet's restart attempt: its status.restarts, or a later one already seen on
// a member Job (the Job informer may be ahead of the JobSet's).
func (m Members) Attempt(js *jobsetv1alpha2.JobSet) int32 {
	attempt := js.Status.Restarts
	for _, j := range m {
		attempt = max(attempt, AttemptOf(j.Labels))
	}
	return attempt
}

// PodOf is where a member pod is: its Job's ReplicatedJob and restart attempt (read from the
// Job, not from the pod), and whether the pod is a member at all.
func (m Members) PodOf(p *corev1.Pod) (replicatedJob string, attempt int32, ok bool) {
	j := m.JobOf(p)
	if j == nil {
		return "", -1, false
	}
	return j.Labels[contract.ReplicatedJobNameLabelKey], AttemptOf(j.Labels), true
}

// Jobs are the member Jobs, by name.
func (m Members) Jobs() []batchv1.Job {
	out := make([]batchv1.Job, 0, len(m))
	for _, j := range m {
		out = append(out, *j)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out
}
