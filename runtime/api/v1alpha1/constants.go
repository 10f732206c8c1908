package v1alpha1

// Names that users of the existing dependency controller rely on; they must
// not change.
const (
	// SkipProtectionAnnotation set to "true" on an object lets it be deleted
	// whatever references it.
	SkipProtectionAnnotation = Group + "/skip-protection"
	// WebhookConfigurationName is the ValidatingWebhookConfiguration the
	// controller manages in every protected provider workspace, and the
	// MutatingWebhookConfiguration (the reference index) it manages in
	// every workspace that holds rules.
	WebhookConfigurationName = "dependency-controller"
	// WebhookConfigurationManager is the ManagedByLabel of those
	// configurations: what tells them from a user's object of the same
	// name.
	WebhookConfigurationManager = "depctrl-controller"
	// ManagedByLabel is the well-known label naming an object's manager.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// DefaultAPIExportName is the default name of the dep-ctrl APIExport.
	DefaultAPIExportName = Group
	// ClusterAnnotation carries an object's logical cluster name in kcp.
	ClusterAnnotation = "kcp.io/cluster"
	// Resource is the plural resource name of DependencyRules.
	Resource = "dependencyrules"
	// Kind is the kind of a DependencyRule.
	Kind = "DependencyRule"
)

// Condition types of a DependencyRule's status.
const (
	// ConditionWorkspacesResolved: every apiExportRef.path resolved to a
	// logical cluster.
	ConditionWorkspacesResolved = "WorkspacesResolved"
	// ConditionTypesServed: the APIExports the rule names serve its types
	// (group, resource, version, and the dependent's kind), and every field
	// path fits the dependent's schema where that schema is structural. A
	// rule on a type nobody serves protects nothing, so this is part of
	// Ready.
	ConditionTypesServed = "TypesServed"
	// ConditionWebhookInstalled: every protected workspace has the webhook
	// configuration covering this rule's dependencies.
	ConditionWebhookInstalled = "WebhookInstalled"
	// ConditionAcyclic: the rule is not part of a dependency cycle.
	ConditionAcyclic = "Acyclic"
	// ConditionIndexed: the rule's workspace has the reference index
	// webhook configuration covering its dependent type, so that deletes
	// read only the dependents that reference the object. It is not part
	// of Ready: without it deletes are still decided, by reading every
	// dependent.
	ConditionIndexed = "Indexed"
	// ConditionEnforced: the webhook registered this generation of the rule
	// and decides deletions with it. The webhook sets it.
	ConditionEnforced = "Enforced"
	// ConditionReady summarizes the others.
	ConditionReady = "Ready"
)
