package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// How a reference that is being made is recorded on the object it names.
//
// The reference index webhook admits a create or update of a dependent that
// newly references an object only after it recorded an Intent on that
// object. A DELETE is admitted against the revision of the object it then
// deletes (the API server decides again when the object changed in between),
// so a deletion decided while the dependent's write is still on its way to
// being stored sees the intent, even though it cannot see the dependent yet.
const (
	// IntentAnnotationPrefix starts the key of every intent annotation on
	// a referenced object; the rest of the key is the intent's Token.
	IntentAnnotationPrefix = "intent." + Group + "/"
	// IntentLabel on a dependent carries the token and the time of the
	// intents its last reference-making write recorded, as
	// "<token>.<unix seconds>", so that its deletion can withdraw them.
	IntentLabel = Group + "/intent"
	// IntentTargetsAnnotation on a dependent lists, as JSON, the objects
	// its last reference-making write recorded intents on, so that its
	// deletion withdraws them whatever the rules say by then.
	IntentTargetsAnnotation = Group + "/intent-targets"
	// IntentWithdrawWebhookName is the webhook, inside each reference index
	// configuration, that withdraws a dependent's intents when it is
	// deleted. It fails open: a missed withdrawal only delays the deletion
	// of the referenced object until the intent has expired.
	IntentWithdrawWebhookName = "withdraw-intent." + Group
)

// Intent records on a referenced object that a dependent's write which
// references it was admitted and may not be stored yet.
//
// +kubebuilder:object:generate=false
type Intent struct {
	// Resource is the dependent's resource and group, as
	// "virtualmachines.compute.example.io".
	Resource string `json:"resource"`
	// Version is the dependent's API version.
	Version string `json:"version"`
	// Namespace is the dependent's namespace; empty when cluster-scoped.
	Namespace string `json:"namespace,omitempty"`
	// Name is the dependent's name; empty when the write is a create that
	// lets the server generate the name.
	Name string `json:"name,omitempty"`
	// GenerateName is the prefix of a generated name.
	GenerateName string `json:"generateName,omitempty"`
	// At is when the intent was recorded.
	At metav1.Time `json:"at"`
	// Rules are the UIDs of the rules over the dependent's type when the
	// intent was recorded; empty in intents recorded before it was
	// introduced. An intent counts only while one of them stands: a write
	// admitted under rules since deleted is no reference a later rule
	// promised to protect, and its intent may never be withdrawn (its
	// dependent deleted while no index webhook was there to see it).
	Rules []string `json:"rules,omitempty"`
}

// IntentTarget names an object an intent was recorded on.
//
// +kubebuilder:object:generate=false
type IntentTarget struct {
	Group    string `json:"group,omitempty"`
	Version  string `json:"version"`
	Resource string `json:"resource"`
	Name     string `json:"name"`
}
