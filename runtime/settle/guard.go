package settle

import (
	"context"
	"time"

	"github.com/go-logr/logr"

	"github.com/depctrl/terraform-provider-depctrl/runtime/tick"
)

// PublishedGuard takes back a stamp the controller published once a
// reference index it relies on is no longer in place as the controller wrote
// it (deleted, or changed by someone else): writes that skip the index record
// no intent, so objects settled under the stamp that they reference would
// stay settled. The controller does the same at its next run
// (controller.PlanStamps); the webhook does not wait for it, since it may be
// down.
type PublishedGuard struct {
	Stamps    Stamps
	Published *PublishedStamps
	// IndexRead reports whether every shard's reference index
	// configurations have been read: before that, none counts as intact.
	IndexRead func() bool
	Log       logr.Logger
}

// Start checks every second until ctx ends. It runs whether or not this
// replica settles: objects settled earlier, or by other replicas, keep their
// labels.
func (g *PublishedGuard) Start(ctx context.Context) error {
	tick.Every(ctx, time.Second, func() { g.Check(ctx) })
	return nil
}

// NeedLeaderElection: every replica guards.
func (g *PublishedGuard) NeedLeaderElection() bool { return false }

// Check withdraws every published stamp whose rules' reference indexes are
// not all intact.
func (g *PublishedGuard) Check(ctx context.Context) {
	if !g.IndexRead() {
		return
	}
	for _, gr := range g.Published.Stamped() {
		if stamp, settleable := g.Stamps.Stamp(gr); stamp == "" || settleable {
			continue
		}
		g.Log.Info("a reference index the published stamp relies on is not intact: sending every deletion to the webhook again", "resource", gr.String())
		if err := g.Published.Withdraw(ctx, gr); err != nil {
			g.Log.Error(err, "withdrawing a published stamp failed", "resource", gr.String())
		}
	}
}
