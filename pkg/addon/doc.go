// Package addon is the runtime every jobset-addons controller binary starts from: flags,
// logging (zap through zapr), feature gates, a manager whose caches are scoped by label
// selectors, health and metrics endpoints, leader election, and the webhook server with its
// certificates. A controller's main declares what is its own (name, gates, caches, webhooks,
// and a Setup function) and calls Main; nothing here knows any controller's feature.
package addon
