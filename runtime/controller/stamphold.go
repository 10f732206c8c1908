package controller

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
	"github.com/depctrl/terraform-provider-depctrl/runtime/settle"
)

// stampHold is how long a new stamp must stand before it is published. A
// burst of rule changes (an apply of many rules over a few types) changes
// a type's stamp at nearly every run; publishing each would rewrite every
// deletion webhook of the type each time. Held back, the old stamp is
// withdrawn at once (the entry selects every object: always safe) and the
// new one is published once, when the burst is over. The webhook settles
// nothing under a stamp before it has been published for --settle-after,
// so holding it back only delays settling by as much.
const stampHold = 10 * time.Second

// stampSeen is when the controller first computed a type's current stamp,
// and whether it has seen it published since.
type stampSeen struct {
	stamp     string
	since     time.Time
	published bool
}

// holdStamps removes from stamps each one that is neither published
// already (in published) nor has stood for stampHold since it was first
// computed, or since it was last seen withdrawn, remembering in seen when
// that was. It returns how long until the next held
// stamp may be published, 0 when none is held.
func holdStamps(stamps Stamps, published Stamps, seen map[schema.GroupResource]stampSeen, now time.Time) time.Duration {
	for gr := range seen {
		if _, ok := stamps[gr]; !ok {
			delete(seen, gr)
		}
	}
	var next time.Duration
	for gr, stamp := range stamps {
		s, ok := seen[gr]
		if published[gr] == stamp {
			if !ok || s.stamp != stamp || !s.published {
				seen[gr] = stampSeen{stamp: stamp, since: now, published: true}
			}
			continue
		}
		if !ok || s.stamp != stamp || s.published {
			// New, or published and withdrawn since (by the webhook,
			// whose rules or index disagree): held again, so that a
			// webhook replica that keeps withdrawing it does not have
			// every configuration of the type rewritten every run.
			s = stampSeen{stamp: stamp, since: now}
			seen[gr] = s
		}
		if wait := s.since.Add(stampHold).Sub(now); wait > 0 {
			delete(stamps, gr)
			if next == 0 || wait < next {
				next = wait
			}
		}
	}
	return next
}

// publishedStamps reads what the installed configurations publish, as the
// webhook reads it (settle.PublishedBy): the object selector of each
// deletion webhook and the rules recorded for its stamps, by the resources
// it covers; none for a resource they cover without agreeing on it.
func publishedStamps(configObjs []process.ShardObject, name string) map[schema.GroupResource]settle.Publication {
	return settle.PublishedBy(configsNamed(configObjs, name))
}

// currentStamps are the current stamps of pubs.
func currentStamps(pubs map[schema.GroupResource]settle.Publication) Stamps {
	out := Stamps{}
	for gr, p := range pubs {
		if p.Current != "" {
			out[gr] = p.Current
		}
	}
	return out
}
