package testbed

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

// AuditRequest is one request of the audit log (auditPolicy): a request of an add-on's
// ServiceAccount, and what the apiserver answered.
type AuditRequest struct {
	User      string
	UserAgent string
	Verb      string // "create", "patch", "list", "watch", ...
	// Resource is the resource with its group: "persistentvolumeclaims",
	// "resourceclaims.resource.k8s.io", ...; Subresource is "status", "" for none.
	Resource    string
	Subresource string
	Namespace   string
	Name        string
	Code        int // 201 created, 409 already exists, ...
	DryRun      bool
	// At is when the apiserver received it.
	At time.Time
}

// AuditRequests reads every request of the audit log received since since, each once (a watch
// is logged as it starts and as it ends).
func AuditRequests(c Config, since time.Time) ([]AuditRequest, error) {
	f, err := os.Open(c.AuditLog())
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []AuditRequest
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var ev struct {
			AuditID   string                    `json:"auditID"`
			Stage     string                    `json:"stage"`
			Verb      string                    `json:"verb"`
			URI       string                    `json:"requestURI"`
			UserAgent string                    `json:"userAgent"`
			User      struct{ Username string } `json:"user"`
			ObjectRef *struct {
				Resource, Subresource, Namespace, Name, APIGroup string
			} `json:"objectRef"`
			ResponseStatus *struct{ Code int } `json:"responseStatus"`
			Received       time.Time           `json:"requestReceivedTimestamp"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("%s: %w", c.AuditLog(), err)
		}
		if ev.Received.Before(since) || seen[ev.AuditID] {
			continue
		}
		seen[ev.AuditID] = true
		a := AuditRequest{User: ev.User.Username, UserAgent: ev.UserAgent, Verb: ev.Verb, At: ev.Received,
			DryRun: strings.Contains(ev.URI, "dryRun=")}
		if ev.ObjectRef != nil {
			a.Resource, a.Subresource, a.Namespace, a.Name = ev.ObjectRef.Resource, ev.ObjectRef.Subresource, ev.ObjectRef.Namespace, ev.ObjectRef.Name
			if ev.ObjectRef.APIGroup != "" {
				a.Resource += "." + ev.ObjectRef.APIGroup
			}
		} else {
			a.Resource = ev.URI // a non-resource request: /api, /apis, ...
		}
		if ev.ResponseStatus != nil {
			a.Code = ev.ResponseStatus.Code
		}
		out = append(out, a)
	}
	return out, sc.Err()
}

// AuditCreate is one create request of the audit log (auditPolicy): an add-on creating a PVC,
// a ResourceClaim or a PodGroup, and what the apiserver answered.
type AuditCreate struct {
	User      string
	Resource  string // "persistentvolumeclaims", "resourceclaims.resource.k8s.io", ...
	Namespace string
	Name      string
	Code      int // 201 created, 409 already exists, ...
	At        time.Time
}

// madeResources are the resources of the objects the add-ons make.
var madeResources = map[string]bool{
	"persistentvolumeclaims": true, "resourceclaims.resource.k8s.io": true, "podgroups.scheduling.volcano.sh": true,
	"podgroups.scheduling.x-k8s.io": true, "podgroups.scheduling.k8s.io": true, "workloads.scheduling.k8s.io": true,
}

// AuditCreates reads every create of an object the add-ons make (PVCs, claims, PodGroups,
// Workloads) of the audit log written since since, dry runs left out.
func AuditCreates(c Config, since time.Time) ([]AuditCreate, error) {
	all, err := AuditRequests(c, since)
	if err != nil {
		return nil, err
	}
	var out []AuditCreate
	for _, a := range all {
		if a.Verb != "create" || a.DryRun || a.Subresource != "" || !madeResources[a.Resource] {
			continue
		}
		out = append(out, AuditCreate{User: a.User, Resource: a.Resource, Namespace: a.Namespace, Name: a.Name, Code: a.Code, At: a.At})
	}
	return out, nil
}
