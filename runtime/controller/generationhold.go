package controller

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// generationHold keeps a rule's new generation from being reported Ready
// until v1alpha1.RuleReadMaxAge after the controller first saw it. A
// webhook replica decides a write of a dependent on rules it confirmed
// current at most that long before; one whose connection to the shard of
// the rules silently stopped delivering decides writes on the previous
// generation for that long after the change, and such a write records no
// intent under the new one. Every write admitted once the rule says Ready
// was decided on the generation it reports. A generation already reported
// Ready (a controller restarted) is not held again.
type generationHold struct {
	// MaxAge is v1alpha1.RuleReadMaxAge; tests shorten it.
	MaxAge time.Duration

	mu    sync.Mutex
	first map[string]seenGeneration
}

// seenGeneration is a rule's generation and when the controller first saw
// it.
type seenGeneration struct {
	uid types.UID
	gen int64
	at  time.Time
}

// wait returns how much longer the rule called key (cluster/name) at uid
// and gen must wait before it may be reported Ready, 0 when it need not;
// reported says whether its status already reports Ready for gen.
func (h *generationHold) wait(key string, uid types.UID, gen int64, reported bool, now time.Time) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.first == nil {
		h.first = map[string]seenGeneration{}
	}
	seen, ok := h.first[key]
	if !ok || seen.uid != uid || seen.gen != gen {
		seen = seenGeneration{uid: uid, gen: gen, at: now}
		if reported {
			seen.at = time.Time{}
		}
		h.first[key] = seen
	}
	maxAge := h.MaxAge
	if maxAge == 0 {
		maxAge = v1alpha1.RuleReadMaxAge
	}
	if left := maxAge - now.Sub(seen.at); left > 0 {
		return left
	}
	return 0
}

// keep forgets the rules not in keys, those gone since.
func (h *generationHold) keep(keys map[string]bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k := range h.first {
		if !keys[k] {
			delete(h.first, k)
		}
	}
}
