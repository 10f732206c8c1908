package settle

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
)

// PublishedGuard takes back a stamp the controller published once it no
// longer holds: when a reference index it relies on is no longer in place as
// the controller wrote it (deleted, or changed by someone else), since writes
// that skip the index record no intent, so objects settled under the stamp
// that they reference would stay settled; and when the rules it was computed
// from changed (a rule created, edited or deleted), since an object settled
// under the old rules was proven unreferenced under them only, while the
// webhook already enforces the new ones. The controller does the same at its
// next run (controller.PlanStamps); the webhook does not wait for it, since
// it may be down.
type PublishedGuard struct {
	Stamps    RuleStamps
	Published *PublishedStamps
	// IndexRead reports whether every shard's reference index
	// configurations have been read: before that, none counts as intact.
	IndexRead func() bool
	// RulesRead reports whether every shard's rules have been read: before
	// that, the stamp Stamps computes is of some of them only.
	RulesRead func() bool
	Log       logr.Logger
}

// RuleStamps are Stamps that also tell the rules each stamp is computed
// from (RulesOf).
type RuleStamps interface {
	Stamps
	Rules(target schema.GroupResource) []RuleRef
}

// Start checks every second until ctx ends. It runs whether or not this
// replica settles: objects settled earlier, or by other replicas, keep their
// labels.
func (g *PublishedGuard) Start(ctx context.Context) error {
	process.Every(ctx, time.Second, func() { g.Check(ctx) })
	return nil
}

// NeedLeaderElection: every replica guards.
func (g *PublishedGuard) NeedLeaderElection() bool { return false }

// Check withdraws every published stamp whose rules' reference indexes are
// not all intact, or whose rules reference the type at a path no index
// webhook sees written (WrittenUnseen), or that is neither the stamp of the
// current rules nor one kept from rules that keep them (Keeps: rules were
// only removed since). A resource
// no rule protects any more keeps what is published: nothing protects its
// objects, settled or not.
func (g *PublishedGuard) Check(ctx context.Context) {
	if !g.IndexRead() || (g.RulesRead != nil && !g.RulesRead()) {
		return
	}
	for _, gr := range g.Published.Stamped() {
		stamp, settleable := g.Stamps.Stamp(gr)
		if stamp == "" {
			continue
		}
		rules := g.Stamps.Rules(gr)
		if Stamp(rules) != stamp {
			// The rules changed between the two reads: the next check.
			continue
		}
		stale := g.Published.Unjustified(gr, stamp, rules)
		switch {
		case stale:
			g.Log.Info("a published stamp is neither the current rules' nor kept from rules that only lost some since: sending every deletion to the webhook again until the controller publishes theirs",
				"resource", gr.String(), "current", stamp)
		case !settleable:
			g.Log.Info("a reference index the published stamp relies on is not intact, or a rule references the type where no index webhook sees it written: sending every deletion to the webhook again", "resource", gr.String())
		default:
			continue
		}
		if err := g.Published.Withdraw(ctx, gr); err != nil {
			g.Log.Error(err, "withdrawing a published stamp failed", "resource", gr.String())
		}
	}
}
