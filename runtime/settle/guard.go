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
// from changed (a rule edited or re-indexed), since an object settled under
// the old rules was proven unreferenced under them only, while the webhook
// already enforces the new ones. A stamp of rules that only lost some since
// stays (Keeps); one of rules that only gained some stays as a bridge
// (Bridges) until it has stood for TransitionFor the settler's
// --settle-after, and is then withdrawn alone. The controller does the same
// at its next run (controller.PlanStamps); the webhook does not wait for
// it, since it may be down.
type PublishedGuard struct {
	Stamps    RuleStamps
	Published *PublishedStamps
	// IndexRead reports whether every shard's reference index
	// configurations have been read: before that, none counts as intact.
	IndexRead func() bool
	// RulesRead reports whether every shard's rules have been read: before
	// that, the stamp Stamps computes is of some of them only.
	RulesRead func() bool
	// SettleAfter is the settler's --settle-after (DefaultSettleAfter
	// when 0). A stamp stays accepted as a bridge to rules added since
	// (Bridges) for TransitionFor it from when this replica sees the new
	// stamp published beside it, and not at all when it was published
	// less than SettleAfter before: nothing can have been settled under it.
	SettleAfter time.Duration
	Log         logr.Logger
	// Settled, when set, tells how many objects this replica settled
	// under a stamp since it started (Settler.SettledUnder): a bridge
	// from a stamp published since then under which it settled none ends
	// at once. Other replicas may have settled some: they then go to the
	// webhook until they are settled again, which is safe.
	Settled interface {
		SettledUnder(gr schema.GroupResource, stamp string) int
	}
	// Now is time.Now unless set.
	Now func() time.Time

	// started is when this replica first checked; accepted is when it
	// first saw each stamp accepted, the zero time for those it saw within
	// startGrace of starting (accepted before it started, for all it can
	// tell); bridged is each bridge's clock.
	started  time.Time
	accepted map[published]time.Time
	bridged  map[published]bridgeClock
}

// bridgeClock times a bridge: from when this replica first saw it, and
// from when it first saw it beside the current rules' stamp published as
// current, which the settler labels objects under.
type bridgeClock struct {
	first, beside time.Time
	// ended: at once, since nothing this replica knows of was settled
	// under it.
	ended bool
}

// startGrace is how long after a replica starts it counts the stamps it
// sees as accepted before it started: its view of the configurations fills
// in meanwhile.
const startGrace = 10 * time.Second

// published is a stamp accepted for a resource.
type published struct {
	gr    schema.GroupResource
	stamp string
}

// TransitionFor is how long a bridge lasts, from when the new stamp is
// published beside it, when the settler waits settleAfter: the settler
// waits settleAfter from the publication, and BridgeSweep is left for its
// sweeps to label what the bridge kept settled.
func TransitionFor(settleAfter time.Duration) time.Duration {
	return settleAfter + BridgeSweep
}

// BridgeSweep is what a bridge lasts beyond the settler's --settle-after:
// the sweeps that label again, under the new stamp, what the bridge kept
// settled. Objects a sweep has not reached by then go to the webhook until
// it does.
const BridgeSweep = 40 * time.Second

// RuleStamps are Stamps that also tell the rules over each type, as a stamp
// counts them.
type RuleStamps interface {
	Stamps
	Protecting(target schema.GroupResource) []Protecting
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
// only removed since) or bridge to them (Bridges: rules were added), and a
// bridge once its time is over (TransitionFor). A resource no rule protects any
// more keeps what is published: nothing protects its objects, settled or
// not.
func (g *PublishedGuard) Check(ctx context.Context) {
	if !g.IndexRead() || (g.RulesRead != nil && !g.RulesRead()) {
		return
	}
	now := time.Now
	if g.Now != nil {
		now = g.Now
	}
	settleAfter := g.SettleAfter
	if settleAfter == 0 {
		settleAfter = DefaultSettleAfter
	}
	if g.started.IsZero() {
		g.started = now()
	}
	transition := TransitionFor(settleAfter)
	accepted, bridged := map[published]time.Time{}, map[published]bridgeClock{}
	for _, gr := range g.Published.Stamped() {
		for _, s := range g.Published.Accepted(gr) {
			k := published{gr: gr, stamp: s}
			since, ok := g.accepted[k]
			if !ok && now().Sub(g.started) >= startGrace {
				since = now()
			}
			accepted[k] = since
		}
		// One read of the rules: the stamp and the rules it is computed
		// from agree.
		ps := g.Stamps.Protecting(gr)
		stamp, settleable := StampFor(ps)
		if stamp == "" {
			continue
		}
		beside := g.Published.Current(gr) == stamp
		var ended []string
		for _, s := range g.Published.Bridged(gr, ps) {
			k := published{gr: gr, stamp: s}
			c, ok := g.bridged[k]
			if !ok {
				c.first = now()
				appeared := accepted[k]
				// Published too recently for anything to be settled
				// under it, or nothing was: a bridge would only hold
				// the new rules' Ready back.
				c.ended = now().Sub(appeared) < settleAfter ||
					!appeared.IsZero() && g.Settled != nil && g.Settled.SettledUnder(gr, s) == 0
			}
			if c.beside.IsZero() && beside {
				c.beside = now()
			}
			bridged[k] = c
			// The settler labels objects under the new stamp from
			// --settle-after after it is published; a bridge whose new
			// stamp is never published ends all the same.
			if c.ended || !c.beside.IsZero() && now().Sub(c.beside) >= transition || now().Sub(c.first) >= 2*transition {
				ended = append(ended, s)
			}
		}
		stale := g.Published.Unjustified(gr, stamp, ps)
		switch {
		case stale:
			g.Log.Info("a published stamp is neither the current rules' nor kept from rules that only lost or gained some since: sending every deletion to the webhook again until the controller publishes theirs",
				"resource", gr.String(), "current", stamp)
		case !settleable && !g.Published.OnlyBridges(gr, ps):
			// A new rule whose index is not in place yet leaves a bridge
			// alone: the rule is not Ready, and the bridge ends all the
			// same.
			g.Log.Info("a reference index the published stamp relies on is not intact, or a rule references the type where no index webhook sees it written: sending every deletion to the webhook again", "resource", gr.String())
		case len(ended) > 0:
			g.Log.Info("a stamp kept as a bridge to rules added over the type is over (its objects have had the time to be settled under the new rules, or none had the time to be settled under it): sending the deletions of those settled under it to the webhook",
				"resource", gr.String(), "stamps", ended, "current", stamp)
			if err := g.Published.WithdrawOnly(ctx, gr, ended); err != nil {
				g.Log.Error(err, "ending a bridge failed", "resource", gr.String())
			}
			continue
		default:
			continue
		}
		if err := g.Published.Withdraw(ctx, gr); err != nil {
			g.Log.Error(err, "withdrawing a published stamp failed", "resource", gr.String())
		}
	}
	g.accepted, g.bridged = accepted, bridged
}
