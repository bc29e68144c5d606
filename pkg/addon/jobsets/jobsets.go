// Package jobsets reads the upstream JobSet API the way every add-on needs it: the view that
// contract.Stages takes, a ReplicatedJob by name, whether a JobSet or Job has finished, and
// which restart attempt a JobSet and its Jobs are in. (Package
// contract may not import the JobSet API; this one is where the two meet.)
package jobsets

import (
	"context"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// View copies what contract.Stages needs out of a JobSet.
func View(js *jobsetv1alpha2.JobSet) contract.JobSetView {
	v := contract.JobSetView{
		Annotations:          js.Annotations,
		StartupPolicyInOrder: js.Spec.StartupPolicy != nil && js.Spec.StartupPolicy.StartupPolicyOrder == jobsetv1alpha2.InOrder,
	}
	for _, rj := range js.Spec.ReplicatedJobs {
		rv := contract.ReplicatedJobView{Name: rj.Name, TemplateAnnotations: rj.Template.Annotations}
		for _, d := range rj.DependsOn {
			rv.DependsOn = append(rv.DependsOn, contract.Dependency{Name: d.Name, Status: contract.DependencyStatus(d.Status)})
		}
		v.ReplicatedJobs = append(v.ReplicatedJobs, rv)
	}
	return v
}

// Stages are the JobSet's stages (contract.Stages).
func Stages(js *jobsetv1alpha2.JobSet) ([]contract.Stage, field.ErrorList) {
	return contract.Stages(View(js))
}

// ReplicatedJob returns the ReplicatedJob of the JobSet with that name, or nil.
func ReplicatedJob(js *jobsetv1alpha2.JobSet, name string) *jobsetv1alpha2.ReplicatedJob {
	for i := range js.Spec.ReplicatedJobs {
		if js.Spec.ReplicatedJobs[i].Name == name {
			return &js.Spec.ReplicatedJobs[i]
		}
	}
	return nil
}

// Finished tells whether the JobSet has finished: its Completed or Failed condition is True.
func Finished(js *jobsetv1alpha2.JobSet) bool {
	return apimeta.IsStatusConditionTrue(js.Status.Conditions, string(jobsetv1alpha2.JobSetCompleted)) ||
		apimeta.IsStatusConditionTrue(js.Status.Conditions, string(jobsetv1alpha2.JobSetFailed))
}

// RunState is what an add-on that follows a JobSet's run reads of its status, as a string for
// addon.ChangesOf: whether it finished, and its restarts (the attempt its Jobs are of).
func RunState(js *jobsetv1alpha2.JobSet) string {
	return strconv.FormatBool(Finished(js)) + "/" + strconv.Itoa(int(js.Status.Restarts))
}

// AttemptOf is the JobSet restart attempt of a Job or Pod (its restart-attempt label), or -1.
func AttemptOf(labels map[string]string) int32 {
	n, err := strconv.ParseInt(labels[contract.RestartAttemptLabelKey], 10, 32)
	if err != nil {
		return -1
	}
	return int32(n)
}

// CurrentAttempt is the JobSet's restart attempt: its status.restarts, or a later attempt
// already seen on its Jobs (the Job informer may be ahead of the JobSet's).
func CurrentAttempt(js *jobsetv1alpha2.JobSet, jobs []batchv1.Job) int32 {
	attempt := js.Status.Restarts
	for i := range jobs {
		attempt = max(attempt, AttemptOf(jobs[i].Labels))
	}
	return attempt
}

// OwnedJobs keeps, in place, the Jobs controlled by this JobSet (not those of an earlier
// JobSet of the same name that is being deleted).
func OwnedJobs(js *jobsetv1alpha2.JobSet, jobs []batchv1.Job) []batchv1.Job {
	out := jobs[:0]
	for _, j := range jobs {
		if ref := metav1.GetControllerOfNoCopy(&j); ref == nil || ref.UID == js.UID {
			out = append(out, j)
		}
	}
	return out
}

// JobHas tells whether the Job's condition of type t is True.
func JobHas(j *batchv1.Job, t batchv1.JobConditionType) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// JobFinished tells whether the Job has finished: its Complete or Failed condition is True.
func JobFinished(j *batchv1.Job) bool {
	return JobHas(j, batchv1.JobComplete) || JobHas(j, batchv1.JobFailed)
}

// Invalid is the 422 Invalid error a JobSet webhook answers with, errs as its causes, or nil
// when errs is empty.
func Invalid(js *jobsetv1alpha2.JobSet, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(jobsetv1alpha2.GroupVersion.WithKind("JobSet").GroupKind(), js.Name, errs)
}

// JobSetOf maps an object labelled with its JobSet's name (a Job, a Pod) to a reconcile
// request for that JobSet: a handler.MapFunc.
func JobSetOf(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[contract.JobSetNameLabelKey]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}

// NameIndex is a field index of objects by their JobSet's name (the JobSetNameLabelKey label):
// register it with IndexByName, list with client.MatchingFields{NameIndex: name}.
const NameIndex = "jobsetName"

// IndexByName is the NameIndex of an object: its JobSet's name, if it has one.
func IndexByName(o client.Object) []string {
	if n := o.GetLabels()[contract.JobSetNameLabelKey]; n != "" {
		return []string{n}
	}
	return nil
}
