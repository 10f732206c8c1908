package settle

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// SettledLabel marks a protected object proven unreferenced; its value is
// the stamp of the rules it was proven under.
const SettledLabel = v1alpha1.Group + "/settled"

// RuleRef is what a stamp depends on of one rule: one that protects the
// type, for a settle stamp, or one over the dependent type, for a reference
// index stamp (registry.NewSchema).
type RuleRef struct {
	// Key is "<cluster>/<name>".
	Key string `json:"key"`
	// UID changes when the rule is recreated under the same key.
	UID string `json:"uid"`
	// Generation changes with every edit of the rule's spec.
	Generation int64 `json:"generation"`
	// IndexEpoch is the rule's status.indexEpoch: the UID of the
	// reference index configuration that records the intents of its
	// dependents. A new configuration may have let writes go by unseen.
	IndexEpoch string `json:"indexEpoch"`
}

// stampLength is how many hex digits of the digest a stamp keeps: 80 bits,
// well within a label value's 63 characters.
const stampLength = 20

// Stamp is the digest of the rules that protect one type, "" when none do.
// The order of refs does not matter. It is Fingerprint without a salt: the
// encoding settle stamps had before Fingerprint existed, which must not
// change, since replicas of other versions compare the stamps the
// controller publishes during a rolling upgrade, and a new encoding would
// unsettle every object once.
func Stamp(refs []RuleRef) string { return Fingerprint("", refs) }

// Fingerprint is the digest of a set of rules, each as of its generation
// and index epoch, for one purpose: salt tells the purposes apart, so that
// the settle stamp (salt "") and the reference index stamp
// (registry.NewSchema) of the same rules differ. It is "" for no rules, and
// the order of refs does not matter.
//
// It hashes salt and "\n" (nothing for salt ""), then the lines
// "Key\x00UID\x00Generation\x00IndexEpoch" of the rules, sorted and
// joined by "\n". Neither keys (a logical cluster and a name), UIDs nor
// epochs hold NUL bytes or newlines, so each line has exactly three NUL
// bytes; a salt must hold none, and then never reads as a line: no two
// pairs of salt and rule set hash the same bytes. A salt with a NUL byte
// panics: salts are constants, and such a one is a mistake.
func Fingerprint(salt string, refs []RuleRef) string {
	if strings.Contains(salt, "\x00") {
		panic(fmt.Sprintf("settle.Fingerprint: the salt %q holds a NUL byte", salt))
	}
	if len(refs) == 0 {
		return ""
	}
	lines := make([]string, len(refs))
	for i, r := range refs {
		lines[i] = fmt.Sprintf("%s\x00%s\x00%d\x00%s", r.Key, r.UID, r.Generation, r.IndexEpoch)
	}
	slices.Sort(lines)
	if salt != "" {
		lines = slices.Insert(lines, 0, salt)
	}
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:])[:stampLength]
}

// Protecting is one rule's protection of a type, as its stamp counts it.
// The webhook's registry and the controller's plan describe the rules over
// a type this way and compute the stamp with StampFor, so that the two
// agree.
type Protecting struct {
	Rule RuleRef
	// Live: the rule's reference index configuration is in place as its
	// status.indexEpoch says. A new one may have let writes go by unseen,
	// recording no intent.
	Live bool
	// Unseen: the rule references the type at a path whose writes no index
	// webhook may see (WrittenUnseen), or at one that does not parse.
	Unseen bool
}

// StampFor returns the stamp of the rules in ps, which all protect one
// type, and whether objects of the type may be settled under it: only
// while every rule's index configuration is live and none references the
// type unseen. A rule listed more than once (it names the type in two
// versions, say) counts once in the stamp, and each listing in the rest.
func StampFor(ps []Protecting) (stamp string, settleable bool) {
	settleable = true
	for _, p := range ps {
		if p.Unseen || !p.Live {
			settleable = false
		}
	}
	stamp = Stamp(RulesOf(ps))
	return stamp, settleable && stamp != ""
}

// RulesOf are the rules of ps that StampFor counts: each once.
func RulesOf(ps []Protecting) []RuleRef {
	seen := map[string]bool{}
	var refs []RuleRef
	for _, p := range ps {
		if seen[p.Rule.Key] {
			continue
		}
		seen[p.Rule.Key] = true
		refs = append(refs, p.Rule)
	}
	return refs
}
