package addon

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// ForeignHolder reads, through r (an add-on's cache of its own objects), the object of key into
// into, and names whose it is when it is another's by id (contract.Identity.Of: Foreign):
// id.Holder, and the object that controls it ("held by Job a-w-0"). It is "" when r holds no
// such object, or holds one that is id's JobSet's own, one an earlier JobSet of its name left
// for the same part, or a user's: a Job whose objects are all so may go on.
func ForeignHolder(ctx context.Context, r client.Reader, key client.ObjectKey, into client.Object, id contract.Identity) string {
	if err := r.Get(ctx, key, into); err != nil {
		return ""
	}
	if id.Of(into) != contract.Foreign {
		return ""
	}
	holder := id.Holder(into)
	if ref := metav1.GetControllerOfNoCopy(into); ref != nil {
		holder += ", held by " + ref.Kind + " " + ref.Name
	}
	return holder
}

// DenyTakenJob is an add-on's Job webhook's denial of a Job some of whose objects another
// JobSet holds (errs, each a Taken message with a ForeignHolder, at the field that names the object): what
// says what the Job's pods would share ("that Job's devices"). The Job's pods never start
// against them; JobSet creates (or resumes) it again with back-off, and the add-on's reconciler
// tells the JobSet.
func DenyTakenJob(addon string, job *batchv1.Job, what string, errs field.ErrorList) admission.Response {
	return admission.Denied(fmt.Sprintf("%s: Job %s is not created or resumed while an object of a name it needs was made for another JobSet, or another Job, so that its pods never use %s (JobSet retries it): %v",
		addon, job.Name, what, errs.ToAggregate()))
}

// DecodeCreateOrResume decodes, into job, a Job of a CREATE admission request, or of the UPDATE
// that resumes it (spec.suspend from true to false: Kueue admitting its JobSet, JobSet
// resuming it), for a Job webhook that must judge a Job before its pods are made. done says
// the handler has nothing more to do and should answer resp: another operation or another
// update (allowed), or an object that does not decode (a bad request). resumed says the request
// is that UPDATE.
func DecodeCreateOrResume(req admission.Request, job *batchv1.Job) (resp admission.Response, resumed, done bool) {
	if req.Operation != admissionv1.Update {
		resp, done = DecodeCreate(req, job)
		return resp, false, done
	}
	old := &batchv1.Job{}
	if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
		return admission.Errored(http.StatusBadRequest, err), false, true
	}
	if err := json.Unmarshal(req.Object.Raw, job); err != nil {
		return admission.Errored(http.StatusBadRequest, err), false, true
	}
	if !ptr.Deref(old.Spec.Suspend, false) || ptr.Deref(job.Spec.Suspend, false) {
		return admission.Allowed(""), false, true
	}
	if job.Namespace == "" {
		job.Namespace = req.Namespace
	}
	return admission.Response{}, true, false
}
