package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/fieldpath"
	"github.com/depctrl/terraform-provider-depctrl/runtime/settle"
)

const (
	// StampLabel holds the digest of the rules the other index labels were
	// computed from.
	StampLabel = "dependencies.opendefense.cloud/indexed"
	// RefLabelPrefix starts the key of every reference label.
	RefLabelPrefix = "ref.dependencies.opendefense.cloud/"

	// scheme versions the label layout: a change to how labels are
	// computed must not let old labels pass for new ones. It salts the
	// stamp (settle.Fingerprint), which also keeps it from ever equalling
	// the settle stamp of the same rules. v3: the fingerprint of the rules
	// is the one the settle stamp is made of.
	scheme = "refindex/v3"
)

// Reference is one way a dependent type names objects of a protected type:
// the protected resource and the field paths that hold names.
type Reference struct {
	Target schema.GroupResource
	// Version is an API version of Target a rule names, for reading the
	// referenced objects; it is not part of the stamp.
	Version string
	Paths   []fieldpath.Path
}

// TargetGVR is the resource to read the referenced objects from.
func (r Reference) TargetGVR() schema.GroupVersionResource { return r.Target.WithVersion(r.Version) }

// RuleVersion identifies one rule at one generation.
type RuleVersion struct {
	Key string
	// UID tells apart rules of the same key: a rule deleted and created
	// again under its name starts over at generation 1, with other paths
	// perhaps, and must not pass for the one before it.
	UID        string
	Generation int64
	// Version is the dependent's API version the rule's paths address.
	Version string
	// Epoch identifies the mutating webhook configuration that indexes
	// the rule's dependents; empty while there is none.
	Epoch string
}

// Schema is what the index knows about one dependent type: every rule over
// it, folded into one stamp and one list of references.
type Schema struct {
	// Stamp is the StampLabel value of a dependent whose labels match
	// these rules; empty when the type cannot be indexed (see NewSchema),
	// and then no dependent of it carries a stamp.
	Stamp      string
	References []Reference
	// RuleUIDs are the UIDs of the rules over the type, sorted: the
	// intents a write records name them (v1alpha1.Intent.Rules).
	RuleUIDs []string
}

// Indexed reports whether dependents of the type carry index labels.
func (s Schema) Indexed() bool { return s.Stamp != "" }

// NewSchema folds the rules over one dependent type. The stamp is their
// fingerprint (settle.Fingerprint, salted with scheme: the settle stamp is
// the same fingerprint unsalted), so it changes whenever any rule over the
// type is added, removed, edited (its generation changes) or deleted and
// created again under its name (its UID changes, its generation starts
// over), and labels computed under other rules never pass for current
// ones. The keys are logical cluster and name, which kcp makes unique per
// installation, so a dependent copied with its labels from elsewhere does
// not carry a valid stamp either.
//
// A type is indexed only while every rule over it has an epoch: a rule
// whose index webhook is not installed, or was removed and is being
// reinstalled, has writes going by unlabelled. A new epoch makes a new
// stamp, so labels from before such a gap are never trusted.
//
// A type cannot be indexed when a path reads .status: status is written
// through the status subresource, whose updates keep the labels as they
// were, so the labels would stop describing the object. Nor when rules
// address the type in different API versions: one object would have to be
// read in two shapes.
func NewSchema(rules []RuleVersion, refs []Reference) Schema {
	s := Schema{References: refs}
	if len(rules) == 0 {
		return s
	}
	for _, r := range rules {
		if r.UID != "" && !slices.Contains(s.RuleUIDs, r.UID) {
			s.RuleUIDs = append(s.RuleUIDs, r.UID)
		}
	}
	slices.Sort(s.RuleUIDs)
	for _, r := range refs {
		for _, p := range r.Paths {
			if readsStatus(p) {
				return s
			}
		}
	}
	fingerprinted := make([]settle.RuleRef, len(rules))
	for i, r := range rules {
		if r.Version != rules[0].Version || r.Epoch == "" {
			return s
		}
		fingerprinted[i] = settle.RuleRef{Key: r.Key, UID: r.UID, Generation: r.Generation, IndexEpoch: r.Epoch}
	}
	s.Stamp = settle.Fingerprint(scheme, fingerprinted)
	return s
}

func readsStatus(p fieldpath.Path) bool {
	s := p.String()
	return s == ".status" || strings.HasPrefix(s, ".status.") || strings.HasPrefix(s, ".status[")
}

// RefLabel is the label key a dependent carries while it references the
// object called name of the target resource. Names may be longer than a
// label allows, so the key holds a digest; a collision can only make the
// caller read an extra dependent, which it checks field by field anyway.
func RefLabel(target schema.GroupResource, name string) string {
	sum := sha256.Sum256([]byte(target.String() + "\x00" + name))
	return RefLabelPrefix + hex.EncodeToString(sum[:])[:40]
}

// IsIndexLabel reports whether a label key belongs to the index.
func IsIndexLabel(key string) bool {
	return key == StampLabel || strings.HasPrefix(key, RefLabelPrefix)
}

// Labels returns the index labels obj must carry under s: none when the
// type is not indexed.
func (s Schema) Labels(obj map[string]interface{}) map[string]string {
	if !s.Indexed() {
		return nil
	}
	out := map[string]string{StampLabel: s.Stamp}
	for _, r := range s.References {
		for _, p := range r.Paths {
			for _, v := range p.Values(obj) {
				if v != "" {
					out[RefLabel(r.Target, v)] = ""
				}
			}
		}
	}
	return out
}

// Relabel returns current with every index label replaced by index, and
// whether that differs from current. Index labels a user set by hand are
// dropped: only the webhook may say what an object references.
func Relabel(current, index map[string]string) (map[string]string, bool) {
	out := make(map[string]string, len(current)+len(index))
	for k, v := range current {
		if !IsIndexLabel(k) {
			out[k] = v
		}
	}
	maps.Copy(out, index)
	return out, !maps.Equal(out, current)
}

// UnstampedSelector selects the dependents whose labels say nothing under
// s: they must be read in full.
func (s Schema) UnstampedSelector() string {
	return StampLabel + " notin (" + s.Stamp + ")"
}

// ReferencingSelector selects the stamped dependents that reference the
// object called name of the target resource.
func (s Schema) ReferencingSelector(target schema.GroupResource, name string) string {
	return RefLabel(target, name) + "," + StampLabel + "=" + s.Stamp
}
