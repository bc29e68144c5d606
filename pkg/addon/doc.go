// Package addon is the runtime every jobset-addons controller binary starts from: flags,
// logging (zap through zapr), feature gates, a manager whose caches are scoped by label
// selectors, health and metrics endpoints, leader election, and the webhook server with its
// certificates. A controller's main declares what is its own (name, gates, caches, webhooks,
// and a Setup function) and calls Main; nothing here knows any controller's feature.
//
// # The shared vocabulary
//
// Every controller says these things the same way, with these names, so that a reader who
// learned one controller reads the others:
//
//   - The preamble. A Reconcile starts with ReconcileJobSet: the JobSet from the cache, nothing to
//     do when it is gone, being deleted, or not this cluster's (below); the context it returns
//     logs with the JobSet. Its duration goes to ObserveReconcile, by result.
//   - Whose JobSet. A JobSet whose spec.managedBy names another controller
//     (contract.ManagedElsewhere; MultiKueue's manager cluster keeps such copies) is not acted
//     on: the JobSets' cache (JobSetsUsing) keeps of it only what NotHere leaves, on which no
//     add-on's Uses holds; ReconcileJobSet skips it; the JobSet mutating webhook
//     (RegisterJobSetWebhooks) leaves it as it is, and the validating one validates it. One
//     Normal Event, ReasonManagedElsewhere, tells the user, whichever add-ons see it.
//   - Written, the cache is behind. What a reconcile wrote is remembered until its cache shows
//     it, so that the next reconcile, which may run before the watch brings the write, does not
//     write it again: Made for objects created (by name, until the informer shows them),
//     Changed for objects changed or deleted (by UID, until the cache shows another
//     resourceVersion). Both forget after MadeTTL, so a write the cache never shows is made
//     again.
//   - Told once. What a reconcile meets again and again is told once: Told.First for the
//     Warning told last about an object (told again only after another), Told.Warn to emit it,
//     Told.Once for each thing told (a PVC reused, a claim's name taken), Told.Forget when the
//     object goes.
//   - Events. Tell emits an Event whose note varies (an error, a count, names): each note is its
//     own Event, never folded into the series of another note, which client-go's recorder
//     would show with the first note only. A note that never varies may go through the
//     recorder's Eventf. EventRecorder cuts notes to what the apiserver takes (CutNote). Events
//     wait, at most EventsYield, for the reconciles in flight to end: a controller's reconciler
//     is given to the builder's Complete as Busy(r).
package addon
