// Package controller is depctrl-controller: it watches the DependencyRules
// of every workspace that binds the dep-ctrl export, through the export's
// virtual workspaces, and each run recomputes from them what the rules
// want (Plan): the deletion webhook configuration in every workspace whose
// types a rule protects, with the settle stamps published in its entries,
// and the reference index configuration next to the rules. It writes what
// differs from what is installed, removes what no rule wants any more, and
// reports each rule's conditions (WorkspacesResolved, TypesServed,
// WebhookInstalled, Acyclic, Indexed, Ready) in its status; the webhook
// reports Enforced. Only the leader of its replicas writes.
package controller
