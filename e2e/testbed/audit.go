package testbed

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

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

// AuditCreates reads every create of the audit log written since since, dry runs left out.
func AuditCreates(c Config, since time.Time) ([]AuditCreate, error) {
	f, err := os.Open(c.AuditLog())
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []AuditCreate
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var ev struct {
			Stage     string                    `json:"stage"`
			Verb      string                    `json:"verb"`
			URI       string                    `json:"requestURI"`
			User      struct{ Username string } `json:"user"`
			ObjectRef *struct {
				Resource, Namespace, Name, APIGroup string
			} `json:"objectRef"`
			ResponseStatus *struct{ Code int } `json:"responseStatus"`
			StageTimestamp time.Time           `json:"stageTimestamp"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("%s: %w", c.AuditLog(), err)
		}
		if ev.Stage != "ResponseComplete" || ev.Verb != "create" || ev.ObjectRef == nil || ev.StageTimestamp.Before(since) ||
			strings.Contains(ev.URI, "dryRun=") {
			continue
		}
		a := AuditCreate{User: ev.User.Username, Resource: ev.ObjectRef.Resource, Namespace: ev.ObjectRef.Namespace,
			Name: ev.ObjectRef.Name, At: ev.StageTimestamp}
		if ev.ObjectRef.APIGroup != "" {
			a.Resource += "." + ev.ObjectRef.APIGroup
		}
		if ev.ResponseStatus != nil {
			a.Code = ev.ResponseStatus.Code
		}
		out = append(out, a)
	}
	return out, sc.Err()
}
