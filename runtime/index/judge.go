package index

import (
	"strings"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// Dependent is what a read of the dependent an intent names found.
type Dependent struct {
	// Found is false when no such dependent is stored.
	Found bool
	// Token is the token of the stored copy's IntentLabel: the intents of
	// the last write stored that recorded any. Empty when it carries none
	// (or one that is not the webhook's format).
	Token string
	// References: it references the object the intent is on. A dependent
	// that is being deleted references nothing.
	References bool
}

// TokenOf returns the token of an IntentLabel value, "" when it is not
// one.
func TokenOf(label string) string {
	token, _, ok := ParseLabel(label)
	if !ok {
		return ""
	}
	return token
}

// Verdict is what an intent's write amounts to, judged from a read of its
// dependent.
type Verdict int

const (
	// InFlight: the write may still be stored. The intent blocks a
	// deletion of the object it is on, and an update of that object may
	// not drop it.
	InFlight Verdict = iota
	// Held: the write is stored and the stored dependent references the
	// object. A deletion finds the dependent by reading the dependents, so
	// the intent is no longer needed.
	Held
	// Released: the write is stored and the stored dependent no longer
	// references the object.
	Released
)

func (v Verdict) String() string {
	switch v {
	case InFlight:
		return "in flight"
	case Held:
		return "held"
	case Released:
		return "released"
	}
	return "unknown"
}

// Judge decides whether the write that recorded in is over, from d, a read
// of its dependent made after the intent was found fresh. It is the one
// rule every reader of intents applies (the deletion webhook, the guard
// against dropping intents, the pruning of stored ones).
//
// A write is known to be over only when it is stored: the stored dependent
// then carries its IntentLabel (the label is the webhook's alone, and a
// later write that records intents of its own withdraws this one's when it
// replaces the label). Until then the intent stands until it expires,
// whatever the stored dependent is and references, and wherever its
// revision has gone: the API server admits a write again whenever its
// compare-and-swap loses to another write (a patch, an update without a
// resourceVersion, a server-side apply, which creates the dependent again
// if it was deleted meanwhile), and the write admitted again records an
// intent of its own only while the object exists. Were the first intent
// released because the dependent moved on, the object could be deleted in
// between and the write then stored referencing it. Every attempt happens
// within the write's request, which the API server's request timeout ends
// before the intent expires (DefaultLifetime).
//
// Once the write is stored, what the stored dependent references decides.
func Judge(in Recorded, d Dependent) Verdict {
	switch {
	case !d.Found || d.Token == "" || d.Token != in.Token():
		return InFlight
	case d.References:
		return Held
	}
	return Released
}

// Token is the token the intent was recorded under: its key's suffix,
// which is also the IntentLabel the write carries when it is stored.
func (in Recorded) Token() string {
	return strings.TrimPrefix(in.Key, v1alpha1.IntentAnnotationPrefix)
}
