package index

import (
	"strconv"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// Dependent is what a read of the dependent an intent names found.
type Dependent struct {
	// Found is false when no such dependent is stored.
	Found bool
	// ResourceVersion is the revision it is stored at.
	ResourceVersion string
	// References: it references the object the intent is on. A dependent
	// that is being deleted references nothing.
	References bool
}

// Verdict is what an intent's write amounts to, judged from a read of its
// dependent.
type Verdict int

const (
	// InFlight: the write may still be stored. The intent blocks a
	// deletion of the object it is on, and an update of that object may
	// not drop it.
	InFlight Verdict = iota
	// Held: the write is over and the stored dependent references the
	// object. A deletion finds the dependent by reading the dependents, so
	// the intent is no longer needed.
	Held
	// Released: the write is over and the stored dependent does not
	// reference the object: the write was stored and the reference has
	// been dropped since, or the write will never be stored.
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
// The API server stores an update or patch only if the dependent is still
// at the revision the write was admitted against (a compare-and-swap on
// that revision; a retry after a conflict is admitted again, against the
// new revision, and records an intent of its own). So while the dependent
// is stored at the intent's Base, or at a revision not known to be later,
// the write may still be stored, whatever the stored copy references: it is
// the old copy the write replaces. Once it is stored at a later revision,
// this write was stored or never will be, and what the stored dependent
// references decides.
//
// A dependent not stored at all, when the write is an update (it has a
// Base), was deleted after the write was admitted: the write cannot be
// stored any more, since the revision it replaces is gone (the API server
// admits a retry that finds the object gone anew, as a create with an
// intent of its own): released. When the write is a create, the dependent
// not stored may be that create on its way (or one deleted since, whose
// deletion withdraws its intents): in flight. A create has no Base, and
// neither has an intent recorded before Base was introduced: a stored
// dependent is then judged by what it references, as before.
func Judge(in v1alpha1.Intent, d Dependent) Verdict {
	switch {
	case !d.Found && in.Base != "":
		return Released
	case !d.Found:
		return InFlight
	case in.Base != "" && !later(d.ResourceVersion, in.Base):
		return InFlight
	case d.References:
		return Held
	}
	return Released
}

// later reports whether resource version rv is known to be later than
// base. kcp's resource versions are the revisions of the shard's etcd, one
// sequence for every object of a logical cluster; a version that is not a
// revision cannot be ordered and is not later, so the write counts as in
// flight until its intent expires.
func later(rv, base string) bool {
	if rv == base {
		return false
	}
	x, errX := strconv.ParseUint(rv, 10, 64)
	y, errY := strconv.ParseUint(base, 10, 64)
	return errX == nil && errY == nil && x > y
}
