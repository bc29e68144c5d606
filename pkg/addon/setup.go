package addon

import (
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// setupManager is the manager handed to Setup, which runs before the manager starts.
//   - Its recorders write Events through the broadcaster given, whose client has a rate limit of
//     its own. controller-runtime's own recorder shares the manager's limit (--kube-api-qps), so
//     that a burst of Events, one per object made, would take half of the writes from the
//     objects themselves.
//   - Its webhook server takes the webhooks' handlers without joining the manager: the manager
//     adds it on its own first GetWebhookServer, once the certificate exists (the server cannot
//     start without tls.crt), while the controllers start without waiting for it.
type setupManager struct {
	ctrl.Manager
	broadcaster events.EventBroadcaster
	webhooks    webhook.Server
}

func (m setupManager) GetEventRecorder(name string) recorder.EventRecorder {
	rec := m.broadcaster.NewRecorder(m.GetScheme(), name)
	// client-go's recorder annotates too; its interface type does not say so.
	return annotated{EventRecorder: rec, AnnotatedEventRecorder: rec.(events.AnnotatedEventRecorder)}
}

func (m setupManager) GetWebhookServer() webhook.Server { return m.webhooks }
