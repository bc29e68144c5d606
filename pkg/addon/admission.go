package addon

import (
	"encoding/json"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// DecodeCreate decodes the object of a CREATE admission request into obj, for handlers of one
// operation. done says the handler has nothing more to do and should answer resp: the request
// is not a CREATE (allowed), or its object does not decode (a bad request). The namespace of a
// namespaced object is filled in from the request when the object lacks it.
func DecodeCreate(req admission.Request, obj client.Object) (resp admission.Response, done bool) {
	if req.Operation != admissionv1.Create {
		return admission.Allowed(""), true
	}
	if err := json.Unmarshal(req.Object.Raw, obj); err != nil {
		return admission.Errored(http.StatusBadRequest, err), true
	}
	if obj.GetNamespace() == "" {
		obj.SetNamespace(req.Namespace)
	}
	return admission.Response{}, false
}
